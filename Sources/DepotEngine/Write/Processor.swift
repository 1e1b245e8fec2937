import DepotWire
public import Foundation

/// A processor (DESIGN §17): `enumerate(batchSize:)` for programs, exactly
/// once. A durable cursor over the records of an entity that matched its
/// predicate when it was created, cut into batches in identifier order;
/// each batch is handed out under a lease and committed with its changes
/// in one save, so that every batch's changes are applied once.
public struct ProcessorSpec: Sendable, Hashable {
    /// Its name, unique in its store: letters, digits, `_`, `-`, `.`.
    public var name: String
    public var entity: String
    public var predicate: String?
    /// Records a batch.
    public var batch: Int
    /// How long a batch handed out stays the client's.
    public var lease: Duration
    /// ``lease`` in seconds, as the store keeps it.
    package var leaseSeconds: Double { ProgressTicker.seconds(lease) }

    public init(
        name: String, entity: String, where predicate: String? = nil, batch: Int = 500, lease: Duration = .seconds(30)
    ) {
        self.name = name
        self.entity = entity
        self.predicate = predicate
        self.batch = batch
        self.lease = lease
    }
}

/// A processor as its store keeps it, with its progress.
public struct ProcessorInfo: Sendable, Hashable {
    public var name: String
    public var entity: String
    public var predicate: String?
    public var batch: Int
    /// How long a batch handed out stays the client's.
    public var lease: Duration
    /// When it was created.
    public var created: Date
    /// Records it covers, and those in committed batches.
    public var total: Int
    public var done: Int
    /// Its batches, those committed, and those under a lease now.
    public var batches: Int
    public var batchesDone: Int
    public var leased: Int
    /// When a batch was last committed.
    public var lastCommit: Date?

    package init(
        name: String, entity: String, predicate: String?, batch: Int, lease: Duration, created: Date, total: Int,
        done: Int, batches: Int, batchesDone: Int, leased: Int, lastCommit: Date?
    ) {
        self.name = name
        self.entity = entity
        self.predicate = predicate
        self.batch = batch
        self.lease = lease
        self.created = created
        self.total = total
        self.done = done
        self.batches = batches
        self.batchesDone = batchesDone
        self.leased = leased
        self.lastCommit = lastCommit
    }

    /// Whether every batch is committed.
    public var finished: Bool { batchesDone == batches }
}

/// A batch handed out under a lease: its identifiers (JSON, as the history
/// writes them), in identifier order.
public struct LeasedBatch: Sendable, Hashable {
    /// The lease: the batch's number and a secret, given back to commit it.
    public var lease: String
    /// When the lease lapses (to the millisecond, as the store keeps it).
    public var expires: Date
    public var identifiers: [String]

    package init(lease: String, expires: Date, identifiers: [String]) {
        self.lease = lease
        self.expires = expires
        self.identifiers = identifiers
    }
}

/// What a processor's next batch is.
public enum ProcessorNext: Sendable, Hashable {
    /// One is handed out.
    case batch(LeasedBatch)
    /// Every batch left is under a lease; the first lapses then.
    case leasedUntil(Date)
    /// Every batch is committed.
    case finished
}

/// The lease a save commits with its changes (``SaveRequest/processorLease``).
public struct ProcessorLease: Sendable, Hashable {
    public var processor: String
    public var lease: String

    public init(processor: String, lease: String) {
        self.processor = processor
        self.lease = lease
    }

    /// The batch a lease names (`SEQ-SECRET`), nil for text that is no lease.
    package var batch: Int? {
        guard let dash = lease.firstIndex(of: "-") else { return nil }
        return Int(lease[..<dash])
    }
}

extension StoreBackend {
    /// Creates a processor: the identifiers of the records that match its
    /// predicate now, in identifier order, cut into batches, saved with it.
    ///
    /// - Throws: ``DepotError`` for a bad name, entity, predicate, batch or
    ///   lease; ``DepotError/Code/conflict`` when the name is taken.
    @discardableResult
    public func createProcessor(_ spec: ProcessorSpec) async throws -> ProcessorInfo {
        guard !spec.name.isEmpty, spec.name.utf8.count <= 100,
            spec.name.unicodeScalars.allSatisfy({
                $0.isASCII
                    && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "_-.".unicodeScalars.contains($0))
            })
        else {
            throw DepotError(
                .invalidArgument,
                "a processor's name is 1 to 100 letters, digits, _, - or ., not \(JSONText.quoted(spec.name))")
        }
        guard (1...10_000).contains(spec.batch) else {
            throw DepotError(.invalidArgument, "a processor's batch is 1 to 10,000 records, not \(spec.batch)")
        }
        guard spec.lease >= .seconds(1), spec.lease <= .seconds(86_400) else {
            throw DepotError(.invalidArgument, "a processor's lease is 1s to 1d")
        }
        let entity = try reads.entity(spec.entity)
        // The identifiers, a page at a time after the last (keyset paging in identifier order).
        var batches: [[String]] = []
        var d = FetchDescriptor(
            entity: entity.name, where: spec.predicate, sort: entity.identifier.map { SortDescriptor($0) },
            limit: spec.batch)
        d.fields = entity.identifier
        while true {
            let page = try await reads.identifiers(d)
            if page.isEmpty { break }
            batches.append(page.map(\.json))
            d.after = page.last?.values
            if page.count < spec.batch { break }
        }
        let created = Date()
        let frozen = batches
        let inserted = try await withSave(author: "processor:\(spec.name)", job: nil) { save in
            try await save.insertProcessor(spec, created: created, batches: frozen)
        }.value
        guard inserted else {
            throw DepotError(
                .conflict, "store \(JSONText.quoted(name)) has a processor \(JSONText.quoted(spec.name)) already")
        }
        return try await processor(spec.name)
    }

    /// Hands out the processor's next batch under a new lease: the first
    /// not committed whose lease (if any) lapsed.
    ///
    /// - Throws: ``DepotError/Code/unknownProcessor`` for no such processor.
    public func nextBatch(_ processor: String) async throws -> ProcessorNext {
        try await nextBatch(processor, at: Date())
    }

    /// ``nextBatch(_:)`` as if it were `now`: the lease runs from then (the
    /// tests' clock). A save of its own here; the daemon sends the same
    /// request through the store's ``SaveQueue``, where leases share commits.
    package func nextBatch(_ processor: String, at now: Date) async throws -> ProcessorNext {
        var request = SaveRequest.next(of: processor)
        request.now = now
        return try await saveAll([request])[0].get().next ?? .finished
    }

    /// The records of a leased batch, as one JSON array in identifier order
    /// (those deleted since are not in it).
    public func records(of batch: LeasedBatch, entity name: String) async throws -> [UInt8] {
        let entity = try reads.entity(name)
        var d = FetchDescriptor(entity: entity.name, sort: entity.identifier.map { SortDescriptor($0) })
        d.identifiers = try batch.identifiers.map {
            try Identifier(json: $0, fieldCount: entity.identifier.count).values
        }
        return try await reads.fetchJSONBytes(d)
    }

    /// The processor called `name`, with its progress.
    ///
    /// - Throws: ``DepotError/Code/unknownProcessor`` when there is none.
    public func processor(_ name: String) async throws -> ProcessorInfo {
        guard let found = try await reads.processors(named: name).first else {
            throw ProcessorRefusal.unknownProcessor(name, store: self.name)
        }
        return found
    }

    /// Drops a processor and its batches; false when there is none.
    public func dropProcessor(_ name: String) async throws -> Bool {
        try await withSave(author: "processor:\(name)", job: nil) { save in
            try await save.deleteProcessor(name)
        }.value
    }
}

/// Why a commit's lease is refused: it changes nothing (`409`).
package enum ProcessorRefusal {
    package static func unknownProcessor(_ name: String, store: String) -> DepotError {
        DepotError(.unknownProcessor, "store \(JSONText.quoted(store)) has no processor \(JSONText.quoted(name))")
    }

    package static func unknownLease(_ lease: ProcessorLease) -> DepotError {
        DepotError(
            .conflict,
            "processor \(JSONText.quoted(lease.processor)) handed out no lease \(JSONText.quoted(lease.lease)); "
                + "commit with the lease of the batch next gave")
    }

    /// Refuses a lease that is not the batch's now: committed already, handed
    /// to another client since, or lapsed.
    package static func check(
        _ lease: ProcessorLease, state: BatchState?, holder: String?, until: String?, now: String
    ) throws {
        if state == .done {
            throw DepotError(
                .conflict,
                "batch \(lease.batch ?? 0) of processor \(JSONText.quoted(lease.processor)) is committed "
                    + "already; a replayed commit changes nothing")
        }
        guard state == .leased, holder == lease.lease else {
            throw DepotError(
                .conflict,
                "the lease of batch \(lease.batch ?? 0) of processor \(JSONText.quoted(lease.processor)) "
                    + "lapsed and the batch was handed out again; this commit changes nothing")
        }
        if let until, until < now {
            throw DepotError(
                .conflict,
                "the lease of batch \(lease.batch ?? 0) of processor \(JSONText.quoted(lease.processor)) "
                    + "lapsed at \(until); this commit changes nothing, and the batch goes to the next client")
        }
    }

    /// A batch's identifiers, kept as a JSON array of each identifier's JSON text.
    package static func identifiers(_ text: String) -> [String] {
        (try? JSONDecoder().decode([String].self, from: Data(text.utf8))) ?? []
    }
}
