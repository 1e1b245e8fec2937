public import DepotEngine
import Foundation
import PostgresNIO

/// Where a PostgreSQL store lives: a server, a database, a role, and the
/// PostgreSQL schema that holds the store's tables (DESIGN §15).
///
/// Read from a libpq-style URL, as `psql` takes it:
///
/// ```swift
/// let a = try PostgresLocation(url: "postgresql://depot@/depot?host=/run/postgresql", schema: "travel")
/// let b = try PostgresLocation(url: "postgresql://depot@db.example:5433/depot", schema: "travel",
///                              passwordFile: "/etc/depot/pg-password")
/// ```
///
/// A `host` that starts with `/` is the folder of the server's Unix socket
/// (`.s.PGSQL.PORT` in it), as for libpq; the password, when the URL does not
/// give one, is the first line of `passwordFile`.
public struct PostgresLocation: Sendable, Hashable {
    /// The folder of the server's socket, or nil for TCP.
    public var socketFolder: String?
    /// The TCP host, when not a socket.
    public var host: String?
    public var port: Int
    public var user: String
    public var password: String?
    public var database: String
    /// The PostgreSQL schema holding the store's tables.
    public var schema: String

    /// - Throws: ``DepotError/Code/invalidArgument`` naming what is wrong
    ///   with the URL, or why the password file cannot be read.
    public init(url text: String, schema: String, passwordFile: String? = nil) throws {
        func bad(_ why: String) -> DepotError {
            DepotError(
                .invalidArgument,
                "PostgreSQL URL \(String(reflecting: text)): \(why); "
                    + "write it as postgresql://USER@/DATABASE?host=/run/postgresql or postgresql://USER@HOST:PORT/DATABASE"
            )
        }
        guard let components = URLComponents(string: text) else { throw bad("not a URL") }
        guard components.scheme == "postgresql" || components.scheme == "postgres" else {
            throw bad("the scheme must be postgresql://")
        }
        guard let user = components.user.flatMap({ $0.removingPercentEncoding }), !user.isEmpty else {
            throw bad("it names no user")
        }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty else { throw bad("it names no database") }
        var socketFolder: String?
        var host = components.host.flatMap { $0.isEmpty ? nil : $0 }
        var port = components.port ?? 5432
        for item in components.queryItems ?? [] {
            switch item.name {
            case "host":
                guard let value = item.value, !value.isEmpty else { throw bad("host= is empty") }
                if value.hasPrefix("/") { socketFolder = value } else { host = value }
            case "port":
                guard let value = item.value.flatMap(Int.init), (1...65535).contains(value) else {
                    throw bad("port= is not a port number")
                }
                port = value
            case "sslmode", "application_name", "connect_timeout":
                continue
            default:
                throw bad("it has a parameter Depot does not know, \(item.name)=")
            }
        }
        if socketFolder == nil && host == nil { socketFolder = "/run/postgresql" }
        var password = components.password.flatMap { $0.removingPercentEncoding }
        if password == nil, let passwordFile {
            guard let contents = try? String(contentsOfFile: passwordFile, encoding: .utf8) else {
                throw DepotError(
                    .invalidArgument,
                    "password_file \(String(reflecting: passwordFile)) cannot be read; "
                        + "check that it exists and that the daemon's user may read it")
            }
            password = contents.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
        }
        guard !schema.isEmpty, schema.utf8.count <= 57, !schema.contains("\""), !schema.contains("\0") else {
            throw DepotError(
                .invalidArgument,
                "schema \(String(reflecting: schema)) must have 1 to 57 bytes and no "
                    + "double quote (its commits are announced on the channel depot:SCHEMA, at most 63 bytes)")
        }
        self.socketFolder = socketFolder
        self.host = socketFolder == nil ? host : nil
        self.port = port
        self.user = user
        self.password = password
        self.database = database
        self.schema = schema
    }

    /// The location a store's configuration gives (DESIGN §15).
    public init(_ settings: PostgresSettings) throws {
        try self.init(url: settings.url, schema: settings.schema, passwordFile: settings.passwordFile)
    }

    /// Where the server is, for messages: the socket or host:port, database and schema.
    public var description: String {
        let server = socketFolder.map { "\($0)/.s.PGSQL.\(port)" } ?? "\(host ?? "?"):\(port)"
        return "PostgreSQL \(server), database \(database), schema \(schema)"
    }

    var clientConfiguration: PostgresClient.Configuration {
        var configuration: PostgresClient.Configuration
        if let socketFolder {
            configuration = PostgresClient.Configuration(
                unixSocketPath: "\(socketFolder)/.s.PGSQL.\(port)",
                username: user, password: password, database: database)
        } else {
            configuration = PostgresClient.Configuration(
                host: host ?? "localhost", port: port, username: user,
                password: password, database: database, tls: .disable)
        }
        configuration.options.maximumConnections = 8
        configuration.options.connectTimeout = .seconds(10)
        // Unqualified names are the store's own: the compiled predicates'
        // tables, depot_fold, COPY's staging tables.
        configuration.options.additionalStartupParameters = [("search_path", PostgresSQL.quote(schema))]
        return configuration
    }
}
