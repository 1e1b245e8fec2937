import DepotWire
import HTTPTypes
import Hummingbird

/// The role check of every request, in one place (docs/api.md, "Access"):
/// reading — every `GET`, a fetch, an aggregate, a duplicates query, a
/// streamed export, an infer (`POST /v1/infer`) — needs
/// the `read` role (or `write`); everything else needs `write`.
struct RoleMiddleware: RouterMiddleware {
    typealias Context = DepotRequestContext
    /// `[access]` as the last reload left it.
    let settings: LiveSettings

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let role = Self.role(request.method, path: request.uri.path)
        let config = settings.current
        let access = AccessPolicy(read: config.readPrincipals, write: config.writePrincipals)
        guard let peer = context.peer else { throw APIError(.forbidden, "the client's identity is unknown") }
        guard access.allows(peer, role) else { throw APIError(.forbidden, access.refusal(peer, role)) }
        return try await next(request, context)
    }

    /// The role a request needs.
    static func role(_ method: HTTPRequest.Method, path: String) -> Role {
        if method == .get || method == .head { return .read }
        if method == .post, path.hasSuffix("/v1/infer") { return .read }
        if method == .post, ["/fetch", "/aggregate", "/duplicates", "/export"].contains(where: { path.hasSuffix($0) }) {
            return .read
        }
        return .write
    }
}
