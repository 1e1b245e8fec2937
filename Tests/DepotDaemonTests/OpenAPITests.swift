@testable import DepotDaemon
import Foundation
import Hummingbird
import Logging
import Testing

@Suite("docs/openapi.yaml")
struct OpenAPITests {
    /// "METHOD /path/{param}" for every operation the document lists.
    static func documented() throws -> Set<String> {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../docs/openapi.yaml").standardized
        let text = try String(contentsOf: file, encoding: .utf8)
        var operations = Set<String>()
        var path: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("  /"), line.hasSuffix(":") {
                path = String(line.dropFirst(2).dropLast())
            } else if !line.hasPrefix("  ") {
                path = nil
            } else if let path, line.hasPrefix("    "), !line.hasPrefix("     "),
                      let method = ["get", "post", "put", "delete", "patch"].first(where: { line == "    \($0):" }) {
                operations.insert("\(method.uppercased()) \(path)")
            }
        }
        return operations
    }

    @Test("documents exactly the routes the daemon serves")
    func matchesRouter() throws {
        let config = try DaemonConfig.parse(DaemonProcess.config(), file: "/tmp/depot.toml")
        let routes = ControlRoutes(config: config, jobs: JobManager(stateDir: "/tmp", logger: Logger(label: "test"), metrics: Metrics()),
                                   metrics: Metrics(), logger: Logger(label: "test"))
        let served = Set(routes.router().routes.map { route in
            let path = route.path.description.split(separator: "/").map { part in
                part.hasPrefix(":") ? "{\(part.dropFirst())}" : String(part)
            }
            return "\(route.method) /" + path.joined(separator: "/")
        })
        let documented = try Self.documented()
        #expect(served.count >= 17)  // the parse found the routes at all
        #expect(served.subtracting(documented) == [], "served but not documented")
        #expect(documented.subtracting(served) == [], "documented but not served")
    }
}
