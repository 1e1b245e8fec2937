import DepotWire
import HTTPTypes
import Hummingbird

/// A known path asked with a method it does not answer: `405
/// method_not_allowed` with `Allow` listing the methods it does, instead of
/// the router's `404`; an unknown path stays `404 not_found`.
struct MethodNotAllowedMiddleware: RouterMiddleware {
    typealias Context = DepotRequestContext
    /// Each route's path pattern (`:name` matches one segment) and method.
    private let routes: [(segments: [Substring], method: HTTPRequest.Method)]

    init(answered: [(path: String, method: HTTPRequest.Method)]) {
        routes = answered.map { ($0.path.split(separator: "/"), $0.method) }
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            let allowed = allowedMethods(request.uri.path)
            guard !allowed.isEmpty, !allowed.contains(request.method) else { throw error }
            let allow = allowed.map(\.rawValue).joined(separator: ", ")
            let refusal = APIError(
                .methodNotAllowed,
                "\(request.method.rawValue) is not a method of \(request.uri.path); "
                    + "it takes \(allow)")
            var response = JSONResponse.make(refusal.body, status: refusal.status)
            response.headers[.allow] = allow
            return response
        }
    }

    /// The methods the routes matching `path` answer, in their order.
    func allowedMethods(_ path: String) -> [HTTPRequest.Method] {
        let segments = path.split(separator: "/")
        var methods: [HTTPRequest.Method] = []
        for route in routes where route.segments.count == segments.count && !methods.contains(route.method) {
            if zip(route.segments, segments).allSatisfy({ $0.hasPrefix(":") || $0 == $1 }) {
                methods.append(route.method)
            }
        }
        return methods
    }
}
