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

        /// A change of `kind`.
        public init(
            _ kind: Kind, entity: String, record: [String: Value] = [:], identifier: [Value] = [],
            set: [String: Value] = [:]
        ) {
            self.kind = kind
            self.entity = entity
            self.record = record
            self.identifier = identifier
            self.set = set
        }
    }

    /// The changes, in order.
    public var changes: [Change]

    /// A change set of `changes`.
    public init(_ changes: [Change]) { self.changes = changes }
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

        package init(index: Int, code: Code, field: String?, message: String) {
            self.index = index
            self.code = code
            self.field = field
            self.message = message
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
