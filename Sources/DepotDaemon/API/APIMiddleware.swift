import DepotWire
import Foundation
import Hummingbird
import Logging

/// Turns every error into the API's JSON error body, reads the peer's
/// credentials, and counts requests.
struct APIMiddleware: RouterMiddleware {
    typealias Context = DepotRequestContext
    let metrics: Metrics
    let logger: Logger
    /// The open stores and the configuration, which each request's context
    /// carries to the routes that resolve a store (``StoreRequestContext``).
    let stores: StoreRegistry
    let settings: LiveSettings

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let start = ContinuousClock.now
        var context = context
        let response: Response
        do {
            context.peer = try await PeerCredentials.read(context.channel)
            context.stores = stores
            context.settings = settings
            response = try await next(request, context)
        } catch {
            let api = APIError.answer(to: error)
            if api.code == .internal {
                // The one log line of an unexpected error; the client sees
                // the code and a fixed message, never the error's text.
                logger.error(
                    "a request failed",
                    metadata: [
                        LogKey.method: "\(request.method)", LogKey.path: "\(request.uri.path)", LogKey.error: "\(error)"
                    ])
            }
            var errorResponse = JSONResponse.make(api.body, status: api.status)
            // The rest of a refused body (too large, no room on the disk, a
            // failure while spooling) is not read: close the connection
            // rather than leave the client waiting for the idle timeout.
            if [413, 500, 507].contains(api.status.code) { errorResponse.headers[.connection] = "close" }
            response = errorResponse
        }
        let elapsed = ContinuousClock.now - start
        metrics.request(
            status: Int(response.status.code),
            seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        return response
    }
}
