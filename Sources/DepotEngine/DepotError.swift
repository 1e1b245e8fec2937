public import DepotWire
import Foundation

/// An error the engine reports to its caller: what failed, where, and how to
/// fix it.
///
/// Every error a user can cause (an unknown entity, a predicate that does not
/// parse, a refused migration, an expired history token) is a `DepotError`
/// with a ``Code`` that clients can match on and a ``message`` meant for a
/// person. Predicate errors also carry the ``position`` of the problem.
///
/// For example:
///
/// ```swift
/// do {
///     _ = try await store.reader.count(FetchDescriptor(entity: "Trip", where: "budget >"))
/// } catch let error as DepotError where error.code == .invalidPredicate {
///     print(error.message, error.position ?? 0)
/// }
/// ```
public struct DepotError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is; stable across releases, used as the
    /// `code` of the control API's error objects.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code as the control API answers it (``ErrorCode``, the one
        /// list of codes); nil for ``database``, which is never on the wire
        /// (the daemon answers `internal` and logs the rest).
        package let wire: ErrorCode?
        private init(_ wire: ErrorCode?) { self.wire = wire }

        /// The configured entities or fields are not valid.
        public static let invalidSchema = Code(.invalidSchema)
        /// The store on disk cannot be migrated to the configured schema.
        public static let migrationRefused = Code(.migrationRefused)
        /// No entity of that name in the store.
        public static let unknownEntity = Code(.unknownEntity)
        /// No field of that name in the entity.
        public static let unknownField = Code(.unknownField)
        /// A predicate did not parse.
        public static let invalidPredicate = Code(.invalidPredicate)
        /// A value does not fit the type of the field it is compared with or stored in.
        public static let typeMismatch = Code(.typeMismatch)
        /// A request's argument is not valid (a negative limit, an empty field list…).
        public static let invalidArgument = Code(.invalidArgument)
        /// A record already exists under the `fail` conflict policy, or a
        /// consumer of that name already exists.
        public static let conflict = Code(.conflict)
        /// The history after the given token was pruned away.
        public static let historyExpired = Code(.historyExpired)
        /// A history token that this store never issued.
        public static let invalidToken = Code(.invalidToken)
        /// No history consumer of that name in the store.
        public static let unknownConsumer = Code(.unknownConsumer)
        /// No processor of that name in the store.
        public static let unknownProcessor = Code(.unknownProcessor)
        /// The store was closed.
        public static let storeClosed = Code(.storeClosed)
        /// The disk (or the server's) is full: nothing of the write was kept.
        public static let diskFull = Code(.diskFull)
        /// A file could not be read or written (its ``DepotError/cause``
        /// says how: a permission, an I/O error…).
        public static let io = Code(.io)
        /// SQLite reported an error (an I/O error, corruption…).
        public static let database = Code(nil)
        /// A save's idempotency key was used before by a save of another body.
        public static let idempotencyKeyReused = Code(.idempotencyKeyReused)
        /// A computed result (a sum, an average) is beyond what its type
        /// holds: past a double's largest finite value, or a 64-bit integer's.
        public static let outOfRange = Code(.outOfRange)

        /// Every code the engine throws, for the daemon's mapping to the API and its tests.
        package static let all: [Code] = [
            .invalidSchema, .migrationRefused, .unknownEntity, .unknownField, .invalidPredicate, .typeMismatch,
            .invalidArgument, .conflict, .historyExpired, .invalidToken, .unknownConsumer, .unknownProcessor,
            .storeClosed, .diskFull, .io, .database, .idempotencyKeyReused, .outOfRange
        ]

        /// The code as the control API spells it, e.g. `unknown_field`.
        public var description: String { wire?.rawValue ?? "database" }
    }

    /// What kind of failure this is.
    public var code: Code
    /// What failed, where, and how to fix it, in one sentence or two.
    public var message: String
    /// For predicate errors, the 1-based character position of the problem.
    public var position: Int?
    /// The error underneath, when this one reports another (a system
    /// call's `POSIXError`, a database's error); not part of equality.
    public var cause: (any Error)?

    /// Creates an error.
    public init(_ code: Code, _ message: String, position: Int? = nil, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.position = position
        self.cause = cause
    }

    /// An ``Code/io`` error for a system call that failed with `errno`:
    /// `message`, then the system's reason, with the `POSIXError` as cause.
    ///
    /// No room (`ENOSPC`, `EDQUOT`) is ``Code/diskFull``, saying so.
    package static func io(_ message: String, errno code: Int32) -> DepotError {
        let full = code == ENOSPC || code == EDQUOT
        return DepotError(
            full ? .diskFull : .io,
            (full ? "the disk is full: " : "") + "\(message): \(String(cString: strerror(code)))",
            cause: POSIXErrorCode(rawValue: code).map { POSIXError($0) })
    }

    public static func == (a: DepotError, b: DepotError) -> Bool {
        a.code == b.code && a.message == b.message && a.position == b.position
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(message)
        hasher.combine(position)
    }

    /// The message, prefixed with the position when there is one.
    public var description: String {
        if let position { return "\(message) (at position \(position))" }
        return message
    }
}

extension DepotError {
    /// The closest of `candidates` to `name`, for "did you mean" hints.
    package static func closest(to name: String, in candidates: [String]) -> String? {
        let lowered = name.lowercased()
        var best: (String, Int)?
        for candidate in candidates {
            let d = editDistance(lowered, candidate.lowercased())
            if d <= max(2, name.count / 3), d < (best?.1 ?? .max) { best = (candidate, d) }
        }
        return best?.0
    }

    /// " (did you mean "x"?)" or "", for the end of a message.
    package static func suggestion(for name: String, in candidates: [String]) -> String {
        guard let c = closest(to: name, in: candidates) else { return "" }
        return " (did you mean \(JSONText.quoted(c))?)"
    }

    private static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in stride(from: 1, through: b.count, by: 1) {
                current[j] = Swift.min(
                    previous[j] + 1, current[j - 1] + 1,
                    previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
