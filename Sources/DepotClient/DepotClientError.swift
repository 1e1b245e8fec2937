public import DepotWire

/// Every error a ``DepotClient`` call throws: the daemon's, with its code,
/// message and HTTP status, or the client's own (no daemon at the socket, an
/// answer that broke off or could not be read).
///
/// ```swift
/// do {
///     _ = try await client.count(FetchRequest(store: "travel", entity: "Trip", where: "budget >"))
/// } catch let error as DepotClientError where error.code == .invalidPredicate {
///     print(error.message, error.position ?? 0)    // "… at position 9", 9
/// }
/// ```
public struct DepotClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure: the daemon's `error.code`
    /// (docs/api.md, "Errors"), or one of the client's own.
    ///
    /// ```swift
    /// if error.code == .unknownStore { print("no such store") }
    /// ```
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code as the daemon writes it: `"unknown_store"`.
        ///
        /// ```swift
        /// DepotClientError.Code.historyExpired.rawValue     // "history_expired"
        /// ```
        public let rawValue: String
        /// A code by its text: `DepotClientError.Code(rawValue: "conflict")`.
        ///
        /// ```swift
        /// let code = DepotClientError.Code(rawValue: "disk_full")     // == .diskFull
        /// ```
        public init(rawValue: String) { self.rawValue = rawValue }
        /// A code of the daemon's vocabulary (``ErrorCode``).
        public init(_ code: ErrorCode) { self.rawValue = code.rawValue }
        /// The code's text.
        ///
        /// ```swift
        /// print(error.code)     // invalid_predicate
        /// ```
        public var description: String { rawValue }

        /// No store of that name (HTTP 404).
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .unknownStore { print(e.message) }   // names the closest store
        /// ```
        public static let unknownStore = Code(.unknownStore)
        /// No entity of that name in the store (404).
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .unknownEntity { print(e.message) }
        /// ```
        public static let unknownEntity = Code(.unknownEntity)
        /// No field of that name in the entity (400).
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .unknownField { print(e.message) }  // "… did you mean budget?"
        /// ```
        public static let unknownField = Code(.unknownField)
        /// No job of that id (404).
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .unknownJob { forget(jobID) }
        /// ```
        public static let unknownJob = Code(.unknownJob)
        /// No consumer of that name (404).
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .unknownConsumer { try await client.createConsumer("indexer", store: "travel") }
        /// ```
        public static let unknownConsumer = Code(.unknownConsumer)
        /// No processor of that name in the store.
        public static let unknownProcessor = Code(.unknownProcessor)
        /// An aggregate whose result is beyond what its type holds (422).
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .outOfRange { print(e.message) }
        /// ```
        public static let outOfRange = Code(.outOfRange)
        /// A predicate that does not parse; ``DepotClientError/position`` marks where (400).
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .invalidPredicate { print(e.message, e.position ?? 0) }
        /// ```
        public static let invalidPredicate = Code(.invalidPredicate)
        /// A value of the wrong type for its field (400).
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .typeMismatch { print(e.message) }   // "budget is a double, …"
        /// ```
        public static let typeMismatch = Code(.typeMismatch)
        /// A request the daemon refuses as it stands (400).
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .invalidArgument { print(e.message) }
        /// ```
        public static let invalidArgument = Code(.invalidArgument)
        /// A token that is not one of the daemon's (400).
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .invalidToken { token = nil }   // start over
        /// ```
        public static let invalidToken = Code(.invalidToken)
        /// The history after a token was pruned: refetch (410).
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .historyExpired { try await refetchEverything() }
        /// ```
        public static let historyExpired = Code(.historyExpired)
        /// The request conflicts with the state of things (409).
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .conflict { print(e.message) }
        /// ```
        public static let conflict = Code(.conflict)
        /// A save refused because a change does not fit what is stored (409);
        /// ``DepotClientError/changes`` lists every failing one.
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .saveRefused { print(e.changes.map(\.code)) }
        /// ```
        public static let saveRefused = Code(.saveRefused)
        /// A save refused because a change is wrong in itself (422);
        /// ``DepotClientError/changes`` lists every failing one.
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .invalidChange { print(e.changes.first?.field ?? "") }
        /// ```
        public static let invalidChange = Code(.invalidChange)
        /// The caller's role does not allow it (403).
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .forbidden { print("ask for the write role:", e.message) }
        /// ```
        public static let forbidden = Code(.forbidden)
        /// A request the daemon cannot read: not JSON, a missing member (400).
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .badRequest { print(e.message) }
        /// ```
        public static let badRequest = Code(.badRequest)
        /// No such route (404).
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .notFound { print("a daemon too old for this call?") }
        /// ```
        public static let notFound = Code(.notFound)
        /// The route does not take this method (405).
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .methodNotAllowed { print(e.message) }
        /// ```
        public static let methodNotAllowed = Code(.methodNotAllowed)
        /// The request's body is larger than the daemon accepts (413).
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .tooLarge { try await client.importFile(path, store: s, entity: e) }
        /// ```
        public static let tooLarge = Code(.tooLarge)
        /// The daemon's disk is full; nothing of the request was kept (507).
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .diskFull { alertOperator(e.message) }
        /// ```
        public static let diskFull = Code(.diskFull)
        /// The daemon could not read or write a file of its own (500).
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .io { print("see journalctl -u depotd") }
        /// ```
        public static let io = Code(.io)
        /// The daemon failed; its log says why (500).
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .internal { print("see journalctl -u depotd") }
        /// ```
        public static let `internal` = Code(.`internal`)
        /// The store is closing or closed (503).
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .storeClosed { try await Task.sleep(for: .seconds(1)) }
        /// ```
        public static let storeClosed = Code(.storeClosed)
        /// The configured schema is not valid (400).
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .invalidSchema { print(e.message) }
        /// ```
        public static let invalidSchema = Code(.invalidSchema)
        /// The store on disk cannot be migrated to its configured schema (409).
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .migrationRefused { print(e.message) }
        /// ```
        public static let migrationRefused = Code(.migrationRefused)

        /// The client's own: no daemon answers at the socket.
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .unreachable { print(e.message) }   // "no daemon at …"
        /// ```
        public static let unreachable = Code(rawValue: "unreachable")
        /// The client's own: the connection closed before the end of the answer.
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .brokenAnswer { retryLater() }
        /// ```
        public static let brokenAnswer = Code(rawValue: "broken_answer")
        /// The client's own: an answer that is not what the API documents.
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .unexpectedAnswer { print(e.message) }   // names the key
        /// ```
        public static let unexpectedAnswer = Code(rawValue: "unexpected_answer")
        /// The client's own: a local file that cannot be read or written.
        ///
        /// ```swift
        /// catch let e as DepotClientError where e.code == .localIO { print(e.message) }   // "cannot read trips.csv: …"
        /// ```
        public static let localIO = Code(rawValue: "local_io")
    }

    /// The kind of failure.
    ///
    /// ```swift
    /// switch error.code { case .unreachable: wait(); default: report(error) }
    /// ```
    public var code: Code
    /// One sentence that says what, where, and how to fix it.
    ///
    /// ```swift
    /// print("depot:", error.message)
    /// ```
    public var message: String
    /// The HTTP status of the daemon's answer; `nil` for the client's own errors.
    ///
    /// ```swift
    /// if error.status == 404 { print("not there") }
    /// ```
    public var status: Int?
    /// For ``Code/invalidPredicate``: the 1-based position in the predicate.
    ///
    /// ```swift
    /// print(predicate); print(String(repeating: " ", count: (error.position ?? 1) - 1) + "^")
    /// ```
    public var position: Int?
    /// For a refused save: every failing change, by index, with its code.
    ///
    /// ```swift
    /// for f in error.changes { print("change \(f.index): \(f.code) \(f.message)") }
    /// ```
    public var changes: [ChangeFailure] = []

    /// For a ``Code/conflict`` of a save: each field another save changed
    /// since the token a change was read at, with its `base`, `stored` and
    /// `yours` values.
    ///
    /// ```swift
    /// catch let e as DepotClientError where e.code == .conflict {
    ///     for c in e.conflicts { print(c.field, c.base ?? "?", c.stored, c.yours) }
    /// }
    /// ```
    public var conflicts: [FieldConflict] { changes.flatMap { $0.conflicts ?? [] } }

    /// An error; the client makes them, a test may too.
    ///
    /// ```swift
    /// DepotClientError(.unknownStore, "no store is named \"tarvel\"", status: 404)
    /// ```
    public init(_ code: Code, _ message: String, status: Int? = nil, position: Int? = nil) {
        self.code = code
        self.message = message
        self.status = status
        self.position = position
    }

    /// The message.
    ///
    /// ```swift
    /// print(error)     // its message
    /// ```
    public var description: String { message }

    /// Whether trying again later may succeed: the daemon was unreachable,
    /// broke the answer off, or failed on its side (a status of 500 or
    /// more, as while it stops); not for a request it refused.
    ///
    /// ```swift
    /// catch let error as DepotClientError where error.isTransient { try await Task.sleep(for: .seconds(1)) }
    /// ```
    public var isTransient: Bool {
        code == .unreachable || code == .brokenAnswer || (status ?? 0) >= 500
    }
}
