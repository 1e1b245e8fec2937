import DepotWire
import Foundation
import HTTPTypes
import Hummingbird

// The console (DESIGN §19): its files at /console/, on the control socket
// like the API, under the same role check (a `read` principal may load it),
// and GET /v1/me, which tells the console what its user may do.
extension ControlRoutes {
    func addConsole(to router: Router<DepotRequestContext>) {
        let console = router.group().add(
            middleware: RoleMiddleware<DepotRequestContext>(role: .read, settings: settings))
        console.get("console") { request, _ in
            // "/console" and "/console/" both come here: the files are named
            // relative to the folder, so the first goes to the second.
            guard request.uri.path.hasSuffix("/") else {
                return Response(status: .permanentRedirect, headers: [.location: "/console/"])
            }
            return try ConsoleAssets.shared.response("index.html", request)
        }
        console.get("console/:file") { request, context in
            try ConsoleAssets.shared.response(context.parameters.get("file") ?? "", request)
        }
    }

    /// `GET /v1/me`: who the daemon sees on this connection, and the role
    /// `[access]` gives them.
    func me(_ context: DepotRequestContext) throws -> Response {
        guard let peer = context.peer else { throw APIError(.forbidden, "the client's identity is unknown") }
        let config = config
        let access = AccessPolicy(read: config.readPrincipals, write: config.writePrincipals)
        return try JSONResponse.encode(
            Identity(uid: Int(peer.uid), user: peer.userName, role: access.allows(peer, .write) ? "write" : "read"))
    }
}
