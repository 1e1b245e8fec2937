import DepotEngine
import Testing

@testable import DepotDaemon

/// `backend`, `url`, `schema`, `password_file` and `lease` of a `[[store]]`
/// (DESIGN §15): read as the store will open, every mistake reported at its key.
@Suite("depotd configuration: store backends")
struct BackendConfigTests {
    static func store(_ keys: String) -> String {
        """
        [daemon]
        state_dir = "/tmp/depot-config-test"
        [[store]]
        name = "travel"
        \(keys)
          [[store.entity]]
          name = "Trip"
          identifier = "id"
            [store.entity.fields]
            id = "string"
        """
    }

    @Test("a store on PostgreSQL: its URL, schema (the store's name by default), password file and lease")
    func postgres() throws {
        let config = try DaemonConfig.parse(
            Self.store(
                """
                backend = "postgresql"
                url = "postgresql://depot@/depot?host=/run/postgresql"
                lease = "30s"
                history_retention = "7d"
                """), file: "/etc/depot.toml")
        let settings = try #require(config.stores[0].postgres)
        #expect(settings.url == "postgresql://depot@/depot?host=/run/postgresql")
        #expect(settings.schema == "travel")
        #expect(settings.passwordFile == nil)
        #expect(settings.lease == .seconds(30))
        #expect(config.stores[0].historyRetention == .seconds(7 * 86_400))
        let other = try DaemonConfig.parse(
            Self.store(
                """
                backend = "postgresql"
                url = "postgresql://depot@db.example.net:5433/depot"
                schema = "trips_2026"
                """), file: "/etc/depot.toml")
        #expect(other.stores[0].postgres?.schema == "trips_2026")
        #expect(other.stores[0].postgres?.lease == .seconds(10))
        // The default backend is SQLite, with no PostgreSQL settings.
        #expect(try DaemonConfig.parse(Self.store(""), file: "/etc/depot.toml").stores[0].postgres == nil)
    }

    @Test(
        "mistakes: an unknown backend, a missing or unreadable URL, SQLite's keys on PostgreSQL and the other way round"
    )
    func mistakes() {
        func problems(_ keys: String) -> [String] {
            let error = #expect(throws: DaemonConfig.Problems.self) {
                try DaemonConfig.parse(Self.store(keys), file: "/etc/depot.toml")
            }
            return error?.problems ?? []
        }
        func has(_ all: [String], _ text: String) {
            #expect(all.contains { $0.contains(text) }, "\(text) not in \(all)")
        }
        has(problems(#"backend = "mysql""#), #"store[0].backend: must be "sqlite" or "postgresql", not "mysql""#)
        has(problems(#"backend = "postgresql""#), "store[0].url: is required for a store on PostgreSQL")
        let mixed = problems(
            """
            backend = "postgresql"
            url = "postgresql://depot@/depot?host=/run/postgresql"
            path = "/var/lib/depot/travel.sqlite"
            cache_mb = 64
            lease = "0s"
            """)
        has(mixed, "store[0].path: is for an SQLite store")
        has(mixed, "store[0].cache_mb: is for an SQLite store")
        has(mixed, "store[0].lease:")
        has(
            problems(#"url = "postgresql://depot@/depot""#),
            #"store[0].url: is for a store on PostgreSQL (backend = "postgresql")"#)
        has(
            problems(
                """
                backend = "postgresql"
                url = "mysql://depot@host/depot"
                """), "store[0].url:")
    }

    @Test("two stores in one schema of one server, or in one file, are refused")
    func samePlace() throws {
        let entity = """
              [[store.entity]]
              name = "Trip"
              identifier = "id"
                [store.entity.fields]
                id = "string"
            """
        func config(_ second: String) -> String {
            Self.store(#"backend = "postgresql"\#nurl = "postgresql://depot@/depot""#) + "\n[[store]]\n" + second + "\n"
                + entity
        }
        let error = #expect(throws: DaemonConfig.Problems.self) {
            try DaemonConfig.parse(
                config(
                    """
                    name = "trips"
                    backend = "postgresql"
                    url = "postgresql://depot@/depot"
                    schema = "travel"
                    """), file: "/etc/depot.toml")
        }
        #expect(
            error?.problems.contains {
                $0.contains(#"store[1].schema: store "trips" would live where store "travel" does"#)
            }
                == true, "\(error?.problems ?? [])")
        // Another schema, or an SQLite store, is another place.
        _ = try DaemonConfig.parse(
            config(#"name = "trips"\#nbackend = "postgresql"\#nurl = "postgresql://depot@/depot""#),
            file: "/etc/depot.toml")
        let files = #expect(throws: DaemonConfig.Problems.self) {
            try DaemonConfig.parse(
                Self.store(#"path = "/srv/a.sqlite""#) + "\n[[store]]\nname = \"b\"\npath = \"/srv/a.sqlite\"\n"
                    + entity, file: "/etc/depot.toml")
        }
        #expect(
            files?.problems.contains {
                $0.contains("store[1].path: store \"b\" would live where store \"travel\" does")
            }
                == true, "\(files?.problems ?? [])")
    }
}
