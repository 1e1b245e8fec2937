import DepotWire

/// The history's bookkeeping in one transaction of a store
/// (``StoreBackend/withHistory(_:)``): the primitives that pruning and the
/// consumers are made of. What they decide (how far a prune goes, who
/// holds it back, who is lost, what a consumer may acknowledge) is written
/// once, below; a backend gives only its SQL.
public protocol HistoryContext: AnyObject, Sendable {
    /// The id of the last history transaction the store issued (0 when none).
    func lastIssued() async throws -> Int64
    /// The id through which the history was pruned (0 when never).
    func prunedThrough() async throws -> Int64
    /// Checks that history after `id` can be read: issued, and not pruned.
    ///
    /// - Throws: ``DepotError/Code/invalidToken`` or ``DepotError/Code/historyExpired``.
    func checkAfter(_ id: Int64) async throws
    /// The id of the last transaction committed before `timestamp` (0 when none).
    func lastTransaction(before timestamp: String) async throws -> Int64
    /// Marks lost the active consumers whose token is below `token` and
    /// whose oldest unread transaction was committed before `cutoff`.
    ///
    /// - Returns: their names, sorted.
    func markLost(below token: Int64, committedBefore cutoff: String) async throws -> [String]
    /// The active consumer with the oldest token (by name among equals).
    func oldestActive() async throws -> (name: String, token: Int64)?
    /// The last transaction of a prune step of about `changes` changes
    /// after transaction `after` (or a bound past which the step may not go).
    func stepEnd(after: Int64, changes: Int) async throws -> Int64
    /// Deletes the transactions after `after` through `through` and their
    /// changes, and records `through` as pruned.
    ///
    /// - Returns: how many transactions it deleted.
    func deleteHistory(after: Int64, through: Int64) async throws -> Int
    /// The consumer called `name`, with its lag.
    ///
    /// - Throws: ``DepotError/Code/unknownConsumer``, naming the others.
    func consumer(_ name: String) async throws -> Consumer
    /// Creates a consumer at `token`, active, acknowledged at `time`;
    /// false when the name is taken.
    func insertConsumer(_ name: String, token: Int64, at time: String) async throws -> Bool
    /// Moves a consumer to `token`, acknowledged at `time`; also makes it
    /// active when `activate`.
    func moveConsumer(_ name: String, token: Int64, activate: Bool, at time: String) async throws
    /// Removes a consumer.
    func deleteConsumer(_ name: String) async throws
}

extension HistoryContext {
    /// The token a consumer starting at `start` takes: it reads after it.
    func token(for start: Consumer.Start) async throws -> Int64 {
        switch start {
        case .now: return try await lastIssued()
        case .beginning: return try await prunedThrough()
        case .after(let token):
            try await checkAfter(token.id)
            return token.id
        }
    }
}

/// Pruning and consumers, written once over ``HistoryContext``.
extension StoreBackend {
    /// Deletes the history up to `bound` and remembers where the kept
    /// history starts, so that a client asking after a pruned token gets
    /// ``DepotError/Code/historyExpired`` rather than a silent gap.
    ///
    /// First, the consumers that would hold the prune back with an
    /// unacknowledged transaction older than `history_max_retention` are
    /// marked lost. Then the history goes in steps of about
    /// `history_prune_step` changes, each in a transaction of its own that
    /// moves the pruned mark, so that a large backlog neither holds the
    /// writer for long nor grows the log without bound, and a prune stopped
    /// half way leaves a consistent history. Each step looks at the
    /// consumers again: it stops at the oldest transaction an active
    /// consumer has not acknowledged (one created meanwhile stops the rest;
    /// see ``PruneOutcome``).
    ///
    /// - Throws: ``DepotError/Code/invalidToken`` for a token the store never issued.
    public func pruneHistory(_ bound: PruneBound) async throws -> PruneOutcome {
        let settings = self.settings
        let cutoff = settings.historyMaxRetention.map(Timestamp.ago)
        let step = max(1, settings.historyPruneStep)
        let store = settings.name
        if case .before(let token) = bound { try token.requireWhole(for: "a prune") }
        let before: String? = if case .olderThan(let age) = bound { Timestamp.ago(age) } else { nil }
        var (outcome, target) = try await withHistory { history -> (PruneOutcome, Int64) in
            let target: Int64
            switch bound {
            case .before(let token):
                let issued = try await history.lastIssued()
                guard token.id <= issued + 1 else {
                    throw HistoryErrors.pruneNeverIssued(store: store, token: token, issued: issued)
                }
                target = token.id - 1
            case .olderThan: target = try await history.lastTransaction(before: before ?? "")
            }
            var outcome = PruneOutcome()
            if let cutoff, target > (try await history.prunedThrough()) {
                outcome.lost = try await history.markLost(below: target, committedBefore: cutoff)
            }
            return (outcome, target)
        }
        while true {
            let frozenTarget = target
            let (deleted, holder) = try await withHistory { history -> (Int?, PruneOutcome.HeldBack?) in
                var last = frozenTarget
                var heldBack: PruneOutcome.HeldBack?
                if let holder = try await history.oldestActive(), holder.token < last {
                    last = holder.token
                    heldBack = PruneOutcome.HeldBack(consumer: holder.name, token: HistoryToken(holder.token))
                }
                let already = try await history.prunedThrough()
                guard last > already else { return (nil, heldBack) }
                let upTo = min(last, try await history.stepEnd(after: already, changes: step))
                return (try await history.deleteHistory(after: already, through: upTo), heldBack)
            }
            if let holder {
                outcome.heldBackBy = holder
                target = min(target, holder.token.id)
            }
            guard let deleted else { break }
            outcome.deleted += deleted
            outcome.saves += 1
        }
        return outcome
    }

    /// Deletes the history transactions before `token` (keeping its own).
    @discardableResult
    public func pruneHistory(before token: HistoryToken) async throws -> PruneOutcome {
        try await pruneHistory(.before(token))
    }

    /// Deletes the history transactions committed more than `age` ago.
    @discardableResult
    public func pruneHistory(olderThan age: Duration) async throws -> PruneOutcome {
        try await pruneHistory(.olderThan(age))
    }

    /// Prunes by the configured retention, if there is one.
    @discardableResult
    public func applyHistoryRetention() async throws -> PruneOutcome {
        guard let retention = settings.historyRetention else { return PruneOutcome() }
        return try await pruneHistory(.olderThan(retention))
    }

    /// Creates a consumer that reads the history from `start` on.
    ///
    /// ```swift
    /// try await store.createConsumer("indexer", from: .beginning)
    /// for t in try await store.reads.history(consumer: "indexer", entity: nil, author: nil, limit: 100) { index(t) }
    /// try await store.acknowledge(consumer: "indexer", token: lastIndexed)
    /// ```
    ///
    /// - Throws: ``DepotError/Code/conflict`` when the name is taken;
    ///   ``DepotError/Code/invalidArgument`` for a name that is not one;
    ///   ``DepotError/Code/invalidToken`` or ``DepotError/Code/historyExpired``
    ///   for a start token never issued or already pruned.
    @discardableResult
    public func createConsumer(_ name: String, from start: Consumer.Start) async throws -> Consumer {
        try Consumer.checkName(name)
        let store = self.name
        return try await withHistory { history in
            let token = try await history.token(for: start)
            guard try await history.insertConsumer(name, token: token, at: Timestamp.now()) else {
                throw HistoryErrors.consumerExists(store: store, name: name)
            }
            return try await history.consumer(name)
        }
    }

    /// Moves a consumer's cursor to `token`: it has processed every
    /// transaction up to it, which pruning may now remove. An older token
    /// than the consumer's is a no-op.
    ///
    /// - Throws: ``DepotError/Code/unknownConsumer``;
    ///   ``DepotError/Code/invalidToken`` for a token never issued;
    ///   ``DepotError/Code/historyExpired`` for a consumer that is lost.
    @discardableResult
    public func acknowledge(consumer name: String, token: HistoryToken) async throws -> Consumer {
        try token.requireWhole(for: "an acknowledgement")
        let store = self.name
        return try await withHistory { history in
            let consumer = try await history.consumer(name)
            if consumer.state == .lost { throw HistoryErrors.lost(consumer: name, store: store) }
            let issued = try await history.lastIssued()
            guard token.id <= issued else {
                throw HistoryErrors.acknowledgedNeverIssued(store: store, token: token, issued: issued)
            }
            guard token > consumer.token else { return consumer }
            try await history.moveConsumer(name, token: token.id, activate: false, at: Timestamp.now())
            return try await history.consumer(name)
        }
    }

    /// Starts a consumer again from `start` (backwards or forwards), and
    /// makes a lost consumer active.
    @discardableResult
    public func resetConsumer(_ name: String, from start: Consumer.Start) async throws -> Consumer {
        try await withHistory { history in
            _ = try await history.consumer(name)
            let token = try await history.token(for: start)
            try await history.moveConsumer(name, token: token, activate: true, at: Timestamp.now())
            return try await history.consumer(name)
        }
    }

    /// Drops a consumer; the history it held back may then be pruned.
    ///
    /// - Throws: ``DepotError/Code/unknownConsumer``.
    public func dropConsumer(_ name: String) async throws {
        try await withHistory { history in
            _ = try await history.consumer(name)
            try await history.deleteConsumer(name)
        }
    }
}
