/// Every code of Depot's errors, as the control API writes it in
/// `{"error": {"code"}}` (docs/api.md): the daemon's own, then the engine's.
/// The one list: the daemon answers with these (`APIError`), the engine's
/// ``DepotError`` codes are these, and DepotClient reads them.
///
/// ```swift
/// ErrorCode.unknownEntity.rawValue   // "unknown_entity"
/// ```
public enum ErrorCode: String, Sendable, Hashable, CaseIterable, Codable {
    /// The request does not parse as the route expects it.
    case badRequest = "bad_request"
    /// A value of the request is out of its range or not one of its choices.
    case invalidArgument = "invalid_argument"
    /// The client lacks the role, or a path lies outside `import_roots`.
    case forbidden
    /// No such route.
    case notFound = "not_found"
    /// The path exists, but not with this method.
    case methodNotAllowed = "method_not_allowed"
    /// No store of that name.
    case unknownStore = "unknown_store"
    /// No job of that id.
    case unknownJob = "unknown_job"
    /// The request does not fit the state of what it names (a job's
    /// output before it succeeded, a record that exists under `fail`).
    case conflict
    /// A save refused because a change does not fit what is stored
    /// (`409`); `changes` lists every failing one.
    case saveRefused = "save_refused"
    /// A save refused because a change is wrong in itself (`422`): a
    /// value of the wrong type, a missing field, one record changed twice.
    case invalidChange = "invalid_change"
    /// The body is larger than the daemon accepts.
    case tooLarge = "too_large"
    /// The daemon's disk cannot hold what was sent; nothing of it is kept.
    case diskFull = "disk_full"
    /// The client, or all clients together, hold the most connections
    /// the daemon takes (`max_connections_per_client`, `max_connections`).
    case tooManyConnections = "too_many_connections"
    /// A file the daemon keeps could not be read or written; details in the log.
    case io
    /// Anything unexpected; details in the log, never on the wire.
    case `internal`

    case invalidSchema = "invalid_schema"
    case migrationRefused = "migration_refused"
    case unknownEntity = "unknown_entity"
    case unknownField = "unknown_field"
    case invalidPredicate = "invalid_predicate"
    case typeMismatch = "type_mismatch"
    case historyExpired = "history_expired"
    case invalidToken = "invalid_token"
    case unknownConsumer = "unknown_consumer"
    case unknownProcessor = "unknown_processor"
    case storeClosed = "store_closed"
    case idempotencyKeyReused = "idempotency_key_reused"
    case outOfRange = "out_of_range"
}
