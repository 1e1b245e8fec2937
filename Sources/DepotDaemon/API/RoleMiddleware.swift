import DepotWire
import HTTPTypes
import Hummingbird

/// The role a group of routes needs (docs/api.md, "Access"): the routes
/// are mounted in a read group — every `GET`, a fetch, an aggregate, a
/// duplicates query, a streamed export, an infer — and a write group, each
/// behind this middleware with its role (``ControlRoutes/router()``), so
/// that a route's role is where it is declared, never read from its path.
struct RoleMiddleware<Context: ConnectionContext>: RouterMiddleware {
    let role: Role
    /// `[access]` as the last reload left it.
    let settings: LiveSettings

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let config = settings.current
        let access = AccessPolicy(read: config.readPrincipals, write: config.writePrincipals)
        guard let peer = context.peer else { throw APIError(.forbidden, "the client's identity is unknown") }
        guard access.allows(peer, role) else { throw APIError(.forbidden, access.refusal(peer, role)) }
        return try await next(request, context)
    }
}
