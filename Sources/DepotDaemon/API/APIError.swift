import DepotEngine
package import DepotWire
import Foundation
package import HTTPTypes
import Hummingbird

/// An error the control API answers with: `{"error": {"code", "message"}}`,
/// plus `position` (the 1-based character of a predicate where it went
/// wrong), under the HTTP status of its code.
///
/// Every error a request can meet becomes one of these through
/// ``answer(to:)``, and ``status`` is the one place where a code meets its
/// HTTP status:
///
/// ```swift
/// throw APIError(.unknownJob, "no job has id \"j1\"")   // 404 unknown_job
/// ```
package struct APIError: Error, Sendable {
    /// The codes of the control API (docs/api.md), the engine's among them.
    package typealias Code = ErrorCode

    package var code: Code
    package var message: String
    package var position: Int?
    /// For a refused save: every failing change.
    package var changes: [ChangeFailure]?

    package init(_ code: Code, _ message: String, position: Int? = nil, changes: [ChangeFailure]? = nil) {
        self.code = code
        self.message = message
        self.position = position
        self.changes = changes
    }

    /// The HTTP status of each code: the only place where one is chosen.
    package var status: HTTPResponse.Status {
        switch code {
        case .badRequest, .invalidArgument, .invalidSchema, .unknownField, .invalidPredicate, .typeMismatch,
            .invalidToken:
            .badRequest
        case .forbidden: .forbidden
        case .notFound, .unknownStore, .unknownJob, .unknownEntity, .unknownConsumer, .unknownProcessor: .notFound
        case .methodNotAllowed: .methodNotAllowed
        case .conflict, .migrationRefused, .saveRefused: .conflict
        case .invalidChange, .idempotencyKeyReused, .outOfRange: .unprocessableContent
        case .historyExpired: .gone
        case .tooLarge: .contentTooLarge
        case .storeClosed, .tooManyConnections: .serviceUnavailable
        case .diskFull: .init(code: 507, reasonPhrase: "Insufficient Storage")
        case .io, .internal: .internalServerError
        }
    }

    /// ``status`` as a number.
    package var statusCode: Int { Int(status.code) }

    /// The answer to any error a route throws. What is not the client's to
    /// know (SQLite's failures, anything unexpected) becomes `internal`, with
    /// a fixed message; the caller logs the error itself.
    package static func answer(to error: any Error) -> APIError {
        switch error {
        case let e as APIError:
            return e
        case let e as JobRefusal:
            switch e {
            case .stopping: return APIError(.storeClosed, e.description)
            case .unknownStore: return APIError(.unknownStore, e.description)
            case .unknownJob: return APIError(.unknownJob, e.description)
            }
        case let e as SaveRefusal:
            // A save refused only by conflicts is a `conflict` (what a
            // client rereads and retries on), else a refusal of its changes.
            let code: Code =
                e.isInvalid ? .invalidChange : e.failures.allSatisfy { $0.code == .conflict } ? .conflict : .saveRefused
            return APIError(
                code, e.description,
                changes: e.failures.map {
                    ChangeFailure(
                        index: $0.index, code: $0.code.rawValue, field: $0.field, message: $0.message,
                        conflicts: $0.conflicts.isEmpty
                            ? nil
                            : $0.conflicts.map {
                                DepotWire.FieldConflict(
                                    field: $0.field, base: $0.base.map(JSONValue.init), stored: JSONValue($0.stored),
                                    yours: JSONValue($0.yours))
                            })
                })
        case let e as DepotError:
            guard let code = e.code.wire else { return .unexpected }
            return APIError(code, e.message, position: e.position)
        case let e as HTTPError:
            switch e.status.code {
            case 413: return APIError(.tooLarge, "the request body is larger than the daemon accepts")
            case 404: return APIError(.notFound, e.body ?? "no such route")
            case 405: return APIError(.methodNotAllowed, e.body ?? "the path does not take this method")
            case 400..<500: return APIError(.badRequest, e.body ?? e.status.reasonPhrase)
            default: return .unexpected
            }
        default:
            return .unexpected
        }
    }

    /// What the client of a request that failed unexpectedly reads.
    package static let unexpected = APIError(.internal, "the daemon failed to serve the request; see its log")

    var body: String {
        let answer = ErrorAnswer(
            error: .init(code: code.rawValue, message: message, position: position, changes: changes))
        return (try? String(decoding: JSONResponse.encoder.encode(answer), as: UTF8.self)) ?? ""
    }
}
