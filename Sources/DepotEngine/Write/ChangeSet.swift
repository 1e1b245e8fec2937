public import Foundation

/// A save's changes (DESIGN §16): records inserted, updated, upserted,
/// replaced or deleted, over any entities of a store, applied in one
/// transaction and logged as one history transaction, or not at all.
public struct ChangeSet: Sendable {
    /// What a change does.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A new record; `already_exists` if its identifier is stored.
        case insert
        /// Fields of a stored record set; `not_found` if none.
        case update
        /// The record inserted, or its given fields set on the stored one.
        case upsert
        /// The record inserted, or put whole in place of the stored one.
        case replace
        /// A stored record deleted, its delete rules applied; `not_found` if none.
        case delete
    }

    /// One change.
    public struct Change: Sendable {
        /// What it does.
        public var kind: Kind
        /// The entity of its record.
        public var entity: String
        /// The record (insert, upsert, replace): its fields by name.
        public var record: [String: Value]
        /// The record's identifier (update, delete), in identifier order.
        public var identifier: [Value]
        /// The fields an update sets.
        public var set: [String: Value]
        /// The token the client read the record at (`if_token`, `If-Match`):
        /// if another save changed the record since, ``ChangeSet/merge`` decides.
        public var ifToken: HistoryToken?

        /// A change of `kind`.
        public init(
            _ kind: Kind, entity: String, record: [String: Value] = [:], identifier: [Value] = [],
            set: [String: Value] = [:], ifToken: HistoryToken? = nil
        ) {
            self.kind = kind
            self.entity = entity
            self.record = record
            self.identifier = identifier
            self.set = set
            self.ifToken = ifToken
        }
    }

    /// What a change read at a token does when another save changed its
    /// record since (Core Data's merge policies, decided per field from
    /// the history; DESIGN §16).
    public enum MergePolicy: String, Sendable, Hashable, CaseIterable {
        /// Refused (`conflict`) when another save changed a field this
        /// change sets; edits of other fields merge.
        case error
        /// This change's fields are applied over the stored record.
        case objectTrump = "object-trump"
        /// The stored value of each field both changed is kept; the rest applied.
        case storeTrump = "store-trump"
        /// The record is written as this change has it: the fields the
        /// other saves changed and this one does not set go back to their
        /// value at the token (which needs `history = "values"`).
        case overwrite
    }

    /// The changes, in order.
    public var changes: [Change]
    /// How changes read at a token merge with later saves.
    public var merge: MergePolicy

    /// A change set of `changes`.
    public init(_ changes: [Change], merge: MergePolicy = .error) {
        self.changes = changes
        self.merge = merge
    }
}

/// One field of a conflict: its value when the change's record was read
/// (`base`, at its token), as stored now, and as the change sets it.
public struct FieldConflict: Sendable, Hashable {
    /// The field's name.
    public var field: String
    /// Its value at the change's token; nil when the history does not keep
    /// it (an entity without `history = "values"`, or pruned history).
    public var base: Value?
    /// Its value now (null for a record deleted since).
    public var stored: Value
    /// The change's value (null for a delete).
    public var yours: Value

    package init(field: String, base: Value?, stored: Value, yours: Value) {
        self.field = field
        self.base = base
        self.stored = stored
        self.yours = yours
    }
}

/// What a save did to each change's record.
public struct ChangeOutcome: Sendable, Hashable {
    /// What happened to the record.
    public enum Effect: String, Sendable, Hashable {
        case inserted, updated, unchanged, deleted
    }

    /// The change's position in the set.
    public var index: Int
    /// Its entity.
    public var entity: String
    /// Its record's identifier, in identifier order.
    public var identifier: [Value]
    /// What it asked.
    public var kind: ChangeSet.Kind
    /// What it did: an update or upsert that changed nothing logs nothing.
    public var effect: Effect
    /// For a change that left its record unchanged, the token of the
    /// record's last change, as the save read it (a record route's `ETag`
    /// without a read after the save); nil otherwise.
    public var storedToken: HistoryToken? = nil
}

/// A save's answer: the token of its history transaction (none when it
/// changed nothing), and each change's outcome, in the set's order.
public struct SaveResult: Sendable, Hashable {
    /// The history transaction's token.
    public var token: HistoryToken?
    /// Each change's outcome.
    public var changes: [ChangeOutcome]
}

/// A save refused: nothing of it was written. Every change that failed,
/// by index, with its code.
public struct SaveRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// Why a change failed (DESIGN §16).
    public enum Code: String, Sendable, Hashable {
        case alreadyExists = "already_exists"
        case notFound = "not_found"
        case conflict
        case invalidValue = "invalid_value"
        case danglingReference = "dangling_reference"
        case deniedByDeleteRule = "denied_by_delete_rule"
        case duplicateChange = "duplicate_change"

        /// Whether the change itself is wrong, whatever is stored (`422`);
        /// else it does not fit what is stored (`409`).
        public var isInvalid: Bool { self == .invalidValue || self == .duplicateChange }
    }

    /// One failing change.
    public struct Failure: Sendable, Hashable {
        /// The change's position in the set.
        public var index: Int
        /// Why.
        public var code: Code
        /// The field at fault, if one is.
        public var field: String?
        /// What went wrong, in a sentence.
        public var message: String
        /// For a conflict: each field both changed, with its three values.
        public var conflicts: [FieldConflict]

        package init(index: Int, code: Code, field: String?, message: String, conflicts: [FieldConflict] = []) {
            self.index = index
            self.code = code
            self.field = field
            self.message = message
            self.conflicts = conflicts
        }
    }

    /// The failing changes, by index.
    public var failures: [Failure]

    package init(failures: [Failure]) { self.failures = failures }

    /// `422` when a change is wrong in itself, `409` when it conflicts with the store.
    public var isInvalid: Bool { failures.contains { $0.code.isInvalid } }

    public var description: String {
        "the save was refused, nothing of it written: "
            + failures.map { "change \($0.index): \($0.message)" }.joined(separator: "; ")
    }
}

/// A save's idempotency key (DESIGN §16): the save happens once; the same
/// key again within `retention` answers the first save's answer.
public struct IdempotencyKey: Sendable, Hashable {
    /// The client's key.
    public var key: String
    /// A digest of the save's request: the same key with another request is refused.
    public var digest: String
    /// How long the key is kept (`idempotency_retention`).
    public var retention: Duration

    public init(key: String, digest: String, retention: Duration) {
        self.key = key
        self.digest = digest
        self.retention = retention
    }
}

/// One save of ``StoreBackend/saveAll(_:)`` (or of a ``SaveQueue``).
public struct SaveRequest: Sendable {
    public var changeSet: ChangeSet
    /// The history transaction's author.
    public var author: String
    /// The most changes the save may hold (`max_save_changes`).
    public var limit: Int
    /// Makes the save happen once (with `answer`, which writes the answer kept under the key).
    public var idempotency: IdempotencyKey?
    /// The answer kept under the idempotency key, written from the save's result.
    public var answer: (@Sendable (SaveResult) throws -> String)?
    /// A processor's batch the save commits with its changes (DESIGN §17):
    /// a lease that is not the batch's now fails the save, which changes nothing.
    public var processorLease: ProcessorLease?
    /// A processor whose next batch the save hands out under a new lease
    /// (DESIGN §17), with no changes: leases share a group's commit as
    /// saves do (``SaveRequest/next(of:)``).
    public var processorNext: String?
    /// The clock the save's processor work reads: now, unless the tests
    /// give another.
    package var now: Date?

    /// The request that hands out `processor`'s next batch.
    public static func next(of processor: String) -> SaveRequest {
        var request = SaveRequest(ChangeSet([]), author: "processor:\(processor)")
        request.processorNext = processor
        return request
    }

    public init(
        _ changeSet: ChangeSet, author: String, limit: Int = 10_000, idempotency: IdempotencyKey? = nil,
        answer: (@Sendable (SaveResult) throws -> String)? = nil
    ) {
        self.changeSet = changeSet
        self.author = author
        self.limit = limit
        self.idempotency = idempotency
        self.answer = answer
    }
}

/// What one save of a group did: its result, or (for an idempotency key
/// seen before) the answer kept under the key, replayed.
public struct SaveReply: Sendable {
    /// The save's result; nil when it was replayed.
    public var result: SaveResult?
    /// The answer kept under the save's idempotency key (written now, or replayed).
    public var answer: String?
    /// Whether the save was an earlier one's, replayed: nothing was written.
    public var replayed: Bool
    /// The processor the save leased from or committed to, with its
    /// progress after the save (read once, in the save's transaction).
    public var processor: ProcessorInfo? = nil
    /// The batch a ``SaveRequest/processorNext`` request handed out, or why none.
    public var next: ProcessorNext? = nil
}
