import DepotEngine
import DepotPostgres
import DepotWire
import Foundation
import TOMLKit

/// Walks the TOML tree, collecting problems instead of stopping at the first.
struct ConfigReader {
    let folder: String
    var problems: [String] = []

    init(folder: String) { self.folder = folder }

    mutating func problem(_ key: String, _ reason: String) { problems.append("\(key): \(reason)") }

    func resolve(_ path: String, against base: String? = nil) -> String {
        if path.hasPrefix("/") { return URL(fileURLWithPath: path).standardizedFileURL.path }
        return URL(fileURLWithPath: base ?? folder).appendingPathComponent(path).standardizedFileURL.path
    }

    mutating func unknownKeys(_ table: TOMLTable, _ known: Set<String>, at key: String) {
        for k in table.keys where !known.contains(k) {
            let suggestion = DepotError.suggestion(for: k, in: Array(known))
            problem(key.isEmpty ? k : "\(key).\(k)", "unknown key\(suggestion)")
        }
    }

    mutating func string(_ table: TOMLTable, _ name: String, at key: String) -> String? {
        guard let value = table[name] else { return nil }
        guard let s = value.tomlValue.string else {
            problem(key, "must be a string")
            return nil
        }
        return s
    }

    mutating func int(_ table: TOMLTable, _ name: String, at key: String, in range: ClosedRange<Int>) -> Int? {
        guard let value = table[name] else { return nil }
        guard let i = value.tomlValue.int, range.contains(i) else {
            problem(key, "must be a whole number from \(range.lowerBound) to \(range.upperBound)")
            return nil
        }
        return i
    }

    mutating func strings(_ table: TOMLTable, _ name: String, at key: String) -> [String]? {
        guard let value = table[name] else { return nil }
        guard let array = value.tomlValue.array else {
            problem(key, "must be an array of strings")
            return nil
        }
        var out: [String] = []
        for (i, element) in array.enumerated() {
            guard let s = element.tomlValue.string else {
                problem("\(key)[\(i)]", "must be a string")
                continue
            }
            out.append(s)
        }
        return out
    }

    mutating func duration(
        _ table: TOMLTable, _ name: String, at key: String,
        in range: ClosedRange<Duration>
    ) -> Duration? {
        guard let value = table[name] else { return nil }
        do throws(DurationText.Invalid) {
            if let i = value.tomlValue.int { return try DurationText.seconds(i, in: range) }
            guard let s = value.tomlValue.string else {
                throw DurationText.Invalid(reason: DurationText.expectation(range))
            }
            return try DurationText.parse(s, in: range)
        } catch {
            problem(key, error.reason)
            return nil
        }
    }

    mutating func read(_ root: TOMLTable, file: String) -> DaemonConfig? {
        unknownKeys(root, ["daemon", "access", "store", "watch"], at: "")
        let daemon = root["daemon"]?.tomlValue.table ?? TOMLTable()
        if root["daemon"] != nil && root["daemon"]?.tomlValue.table == nil { problem("daemon", "must be a table") }
        unknownKeys(
            daemon,
            [
                "state_dir", "socket", "socket_mode", "socket_group", "import_roots", "backup_dir", "log_level",
                "max_upload_bytes", "max_request_bytes", "idle_timeout", "stream_write_timeout",
                "body_timeout", "max_connections", "max_connections_per_client"
            ],
            at: "daemon")
        let stateDir = resolve(string(daemon, "state_dir", at: "daemon.state_dir") ?? "/var/lib/depot")
        let socket = resolve(string(daemon, "socket", at: "daemon.socket") ?? "/run/depot/depot.sock")
        var socketMode: UInt16 = 0o660
        if let text = string(daemon, "socket_mode", at: "daemon.socket_mode") {
            if (1...4).contains(text.count), text.allSatisfy({ ("0"..."7").contains($0) }),
                let mode = UInt16(text, radix: 8), mode <= 0o777
            {
                socketMode = mode
            } else {
                problem("daemon.socket_mode", "must be an octal mode such as \"0660\", not \(JSONText.quoted(text))")
            }
        }
        let socketGroup = string(daemon, "socket_group", at: "daemon.socket_group")
        let roots = (strings(daemon, "import_roots", at: "daemon.import_roots") ?? []).map { resolve($0) }
        // Where backups go unless a job names a path (DESIGN §20).
        let backupDir = resolve(string(daemon, "backup_dir", at: "daemon.backup_dir") ?? stateDir + "/backups")
        let logLevel = string(daemon, "log_level", at: "daemon.log_level") ?? "info"
        let levels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
        if !levels.contains(logLevel) {
            problem("daemon.log_level", "must be one of \(levels.joined(separator: ", "))")
        }
        let maxUpload = int(daemon, "max_upload_bytes", at: "daemon.max_upload_bytes", in: 1...(1 << 40)) ?? (8 << 30)
        let maxRequest =
            int(daemon, "max_request_bytes", at: "daemon.max_request_bytes", in: 1024...(1 << 30))
            ?? (1 << 20)
        let idle =
            duration(daemon, "idle_timeout", at: "daemon.idle_timeout", in: DurationText.idleTimeout)
            ?? .seconds(60)
        let streamWrite =
            duration(
                daemon, "stream_write_timeout", at: "daemon.stream_write_timeout",
                in: DurationText.idleTimeout) ?? .seconds(30)
        let bodyTimeout =
            duration(daemon, "body_timeout", at: "daemon.body_timeout", in: DurationText.idleTimeout)
            ?? .seconds(30)
        // Live fetches are connections: a service may hold thousands.
        let maxConnections = int(daemon, "max_connections", at: "daemon.max_connections", in: 1...1_000_000) ?? 16_384
        let perClient =
            int(
                daemon, "max_connections_per_client", at: "daemon.max_connections_per_client",
                in: 1...1_000_000) ?? 4_096

        var read: [Principal] = [], write: [Principal] = []
        if let access = root["access"]?.tomlValue.table {
            unknownKeys(access, ["read", "write"], at: "access")
            for (name, role) in [("read", 0), ("write", 1)] {
                for (i, text) in (strings(access, name, at: "access.\(name)") ?? []).enumerated() {
                    do {
                        let p = try Principal(parsing: text)
                        if role == 0 { read.append(p) } else { write.append(p) }
                    } catch {
                        problem("access.\(name)[\(i)]", "\(error)")
                    }
                }
            }
        }

        var stores: [StoreConfiguration] = []
        var storeNames: Set<String> = []
        // Where each store lives: two stores in one file or one schema
        // would write each other's tables.
        var places: [String: String] = [:]
        for (i, value) in (root["store"]?.tomlValue.array.map(Array.init) ?? []).enumerated() {
            let key = "store[\(i)]"
            guard let table = value.tomlValue.table else {
                problem(key, "must be a table ([[store]])")
                continue
            }
            if let store = readStore(table, at: key, stateDir: stateDir) {
                if !storeNames.insert(store.name).inserted {
                    problem("\(key).name", "store \(JSONText.quoted(store.name)) is declared twice")
                }
                let place = store.postgres.map { "\($0.url) schema \($0.schema)" } ?? store.path
                if let other = places[place] {
                    problem(
                        store.postgres == nil ? "\(key).path" : "\(key).schema",
                        "store \(JSONText.quoted(store.name)) would live where store \(JSONText.quoted(other)) does")
                } else {
                    places[place] = store.name
                }
                stores.append(store)
            }
        }
        if stores.isEmpty && root["store"] == nil { problem("store", "declare at least one [[store]]") }

        var watches: [DaemonConfig.Watch] = []
        for (i, value) in (root["watch"]?.tomlValue.array.map(Array.init) ?? []).enumerated() {
            let key = "watch[\(i)]"
            guard let table = value.tomlValue.table else {
                problem(key, "must be a table ([[watch]])")
                continue
            }
            unknownKeys(
                table,
                [
                    "path", "store", "entity", "format", "on_conflict", "after", "max_rejects", "references",
                    "delimiter", "quote", "escape", "header", "quotes", "skip_initial_space", "nulls", "columns",
                    "encoding"
                ],
                at: key)
            guard let path = string(table, "path", at: "\(key).path") else {
                problem("\(key).path", "is required: the folder to watch")
                continue
            }
            let storeName = string(table, "store", at: "\(key).store") ?? ""
            let entityName = string(table, "entity", at: "\(key).entity") ?? ""
            if let store = stores.first(where: { $0.name == storeName }) {
                if !store.entities.contains(where: { $0.name == entityName }) {
                    problem(
                        "\(key).entity",
                        "store \(JSONText.quoted(storeName)) has no entity \(JSONText.quoted(entityName))"
                            + DepotError.suggestion(for: entityName, in: store.entities.map(\.name)))
                }
            } else {
                problem(
                    "\(key).store",
                    "no store is named \(JSONText.quoted(storeName))"
                        + DepotError.suggestion(for: storeName, in: stores.map(\.name)))
            }
            // The same readers as a job's settings (JobSetting).
            let format =
                setting(
                    string(table, "format", at: "\(key).format") ?? "auto", at: "\(key).format",
                    JobSetting.importFormat) ?? nil
            let policy = setting(
                string(table, "on_conflict", at: "\(key).on_conflict") ?? "upsert",
                at: "\(key).on_conflict", JobSetting.conflictPolicy)
            let after = string(table, "after", at: "\(key).after") ?? "move"
            if after != "move" && after != "delete" { problem("\(key).after", "must be move or delete") }
            let maxRejects = rejectLimit(table, at: "\(key).max_rejects")
            let deferReferences = setting(
                string(table, "references", at: "\(key).references") ?? "check",
                at: "\(key).references", JobSetting.references)
            let dialect = watchDialect(table, at: key)
            watches.append(
                .init(
                    path: resolve(path), store: storeName, entity: entityName, format: format,
                    onConflict: policy ?? .upsert, deleteAfter: after == "delete",
                    maxRejects: maxRejects ?? .count(1_000), deferReferences: deferReferences ?? false,
                    dialect: dialect))
        }
        guard problems.isEmpty else { return nil }
        return DaemonConfig(
            file: file, stateDir: stateDir, socket: socket, socketMode: socketMode,
            socketGroup: socketGroup, importRoots: roots, backupDir: backupDir, logLevel: logLevel,
            maxUploadBytes: Int64(maxUpload), maxRequestBytes: maxRequest, idleTimeout: idle,
            streamWriteTimeout: streamWrite, bodyTimeout: bodyTimeout,
            maxConnections: maxConnections, maxConnectionsPerClient: perClient,
            readPrincipals: read, writePrincipals: write, stores: stores, watches: watches)
    }

    /// A watch's dialect settings (as an import job's: JobSetting), each
    /// problem named with its key.
    mutating func watchDialect(_ table: TOMLTable, at key: String) -> JobSettings {
        var d = JobSettings()
        d.delimiter = string(table, "delimiter", at: "\(key).delimiter")
        d.quote = string(table, "quote", at: "\(key).quote")
        d.escape = string(table, "escape", at: "\(key).escape")
        d.quotes = string(table, "quotes", at: "\(key).quotes")
        d.encoding = string(table, "encoding", at: "\(key).encoding")
        if let v = table["header"] {
            if let b = v.tomlValue.bool { d.header = b } else { problem("\(key).header", "must be true or false") }
        }
        if let v = table["skip_initial_space"] {
            if let b = v.tomlValue.bool {
                d.skipInitialSpace = b
            } else {
                problem("\(key).skip_initial_space", "must be true or false")
            }
        }
        if let v = table["nulls"] {
            if let list = v.tomlValue.array, list.allSatisfy({ $0.tomlValue.string != nil }) {
                d.nulls = list.compactMap { $0.tomlValue.string }
            } else {
                problem("\(key).nulls", "must be a list of strings, like [\"NA\", \"-\"]")
            }
        }
        if let v = table["columns"] {
            if let t = v.tomlValue.table {
                var map: [String: String] = [:]
                for (column, field) in t {
                    if let f = field.tomlValue.string {
                        map[column] = f
                    } else {
                        problem("\(key).columns.\(column)", "must be the name of a field")
                    }
                }
                d.columns = map
            } else {
                problem("\(key).columns", "must be a table of column = \"field\"")
            }
        }
        var check = ImportOptions()
        do {
            try check.read(dialectOf: d)
        } catch let error as DepotError {
            problem(key, error.message)
        } catch {
            problem(key, "\(error)")
        }
        return d
    }

    mutating func rejectLimit(_ table: TOMLTable, at key: String) -> ImportOptions.RejectLimit? {
        guard let value = table["max_rejects"] else { return nil }
        // The same reading as a job's max_rejects: a count, a fraction or a percentage.
        let text =
            value.tomlValue.int.map(String.init) ?? value.tomlValue.double.map { String($0) }
            ?? value.tomlValue.string
        guard let text else {
            problem(key, "must be a count (1000), a fraction below 1 (0.01) or a percentage (\"1%\")")
            return nil
        }
        return setting(text, at: key, JobSetting.rejectLimit)
    }

    /// A job setting of a `[[watch]]`, read as a job's is; a refusal is a problem of `key`.
    mutating func setting<T>(_ text: String, at key: String, _ reader: (String) throws(JobSetting.Invalid) -> T) -> T? {
        do throws(JobSetting.Invalid) {
            return try reader(text)
        } catch {
            problem(key, error.expectation)
            return nil
        }
    }

    /// An entity's `[store.entity.relationships]`: `name = { to = "T" }`
    /// (a to-one, `required = true` to forbid null) or `name = { to = "T",
    /// inverse = "r", delete = "cascade" }` (a to-many, the inverse of
    /// to-one `r` of `T`).
    mutating func readRelationships(_ entity: TOMLTable, at key: String) -> [Relationship] {
        guard let raw = entity["relationships"] else { return [] }
        guard let table = raw.tomlValue.table else {
            problem(key, "must be a table of name = { to = \"Entity\" }")
            return []
        }
        var out: [Relationship] = []
        for name in table.keys {
            let rkey = "\(key).\(name)"
            guard let r = table[name]?.tomlValue.table else {
                problem(
                    rkey,
                    "must be a table such as { to = \"Customer\" } (a to-one) or "
                        + "{ to = \"OrderLine\", inverse = \"order\", delete = \"cascade\" } (a to-many)")
                continue
            }
            unknownKeys(r, ["to", "required", "inverse", "delete"], at: rkey)
            guard let target = string(r, "to", at: "\(rkey).to") else {
                if r["to"] == nil { problem("\(rkey).to", "is required: the related entity") }
                continue
            }
            if name.isEmpty || name.contains(".") || name.utf8.contains(0) {
                problem(rkey, "a relationship's name cannot be empty or hold a dot or NUL")
                continue
            }
            if let inverse = string(r, "inverse", at: "\(rkey).inverse") {
                if r["required"] != nil {
                    problem("\(rkey).required", "applies to a to-one; a to-many (with inverse) is never required")
                }
                var rule = DeleteRule.nullify
                if let text = string(r, "delete", at: "\(rkey).delete") {
                    if let known = DeleteRule(rawValue: text) {
                        rule = known
                    } else {
                        problem("\(rkey).delete", "must be cascade, nullify or deny, not \(JSONText.quoted(text))")
                    }
                }
                out.append(Relationship(name: name, target: target, kind: .toMany(inverse: inverse, delete: rule)))
            } else {
                if r["delete"] != nil {
                    problem("\(rkey).delete", "sits on the to-many side (with inverse); a to-one has no delete rule")
                }
                var required = false
                if let value = r["required"] {
                    if let b = value.tomlValue.bool {
                        required = b
                    } else {
                        problem("\(rkey).required", "must be true or false")
                    }
                }
                out.append(Relationship(name: name, target: target, kind: .toOne(required: required)))
            }
        }
        return out
    }

    mutating func readStore(_ table: TOMLTable, at key: String, stateDir: String) -> StoreConfiguration? {
        unknownKeys(
            table,
            [
                "name", "path", "save_every", "save_interval", "history_retention", "history_max_retention",
                "cache_mb", "durability", "entity", "backend", "url", "schema", "password_file", "lease",
                "max_save_changes", "idempotency_retention", "backup"
            ],
            at: key)
        guard let name = string(table, "name", at: "\(key).name"), !name.isEmpty else {
            problem("\(key).name", "is required")
            return nil
        }
        if name.contains("/") || name.hasPrefix(".") {
            problem("\(key).name", "\(JSONText.quoted(name)) cannot contain / or start with a dot")
        }
        let path = resolve(string(table, "path", at: "\(key).path") ?? "\(name).sqlite", against: stateDir)
        var declarations: [(key: String, declaration: EntityDeclaration)] = []
        let entityArray = table["entity"]?.tomlValue.array.map(Array.init) ?? []
        // A store may declare no entity: they then all come from the API
        // (PUT /v1/stores/{s}/entities/{e}, DESIGN §18).
        for (j, value) in entityArray.enumerated() {
            let ekey = "\(key).entity[\(j)]"
            guard let e = value.tomlValue.table else {
                problem(ekey, "must be a table ([[store.entity]])")
                continue
            }
            unknownKeys(
                e,
                [
                    "name", "identifier", "indexes", "preserve_on_delete", "history", "fields", "relationships",
                    "renamed_from"
                ],
                at: ekey)
            let ename = string(e, "name", at: "\(ekey).name") ?? ""
            var identifier: [String] = []
            if let single = e["identifier"]?.tomlValue.string {
                identifier = [single]
            } else if let list = strings(e, "identifier", at: "\(ekey).identifier") {
                identifier = list
            } else {
                problem("\(ekey).identifier", "is required: a field name, or a list of them for a compound key")
            }
            var indexes: [[String]] = []
            if let raw = e["indexes"] {
                if let array = raw.tomlValue.array {
                    for (k, item) in array.enumerated() {
                        if let s = item.tomlValue.string {
                            indexes.append([s])
                        } else if let list = item.tomlValue.array {
                            indexes.append(list.compactMap { $0.tomlValue.string })
                        } else {
                            problem("\(ekey).indexes[\(k)]", "must be a field name or a list of field names")
                        }
                    }
                } else {
                    problem("\(ekey).indexes", "must be a list such as [[\"destination\"], [\"startDate\"]]")
                }
            }
            let preserve = strings(e, "preserve_on_delete", at: "\(ekey).preserve_on_delete") ?? []
            var history = HistoryDetail.fields
            if let text = string(e, "history", at: "\(ekey).history") {
                if let detail = HistoryDetail(rawValue: text) {
                    history = detail
                } else {
                    problem(
                        "\(ekey).history",
                        "must be \"fields\" (the names of changed fields) or \"values\" "
                            + "(also their old and new values), not \(JSONText.quoted(text))")
                }
            }
            var fields: [Field] = []
            var fieldsRenamedFrom: [String: String] = [:]
            var fieldsConverted: [String: String] = [:]
            if let ft = e["fields"]?.tomlValue.table {
                for fname in ft.keys {
                    // A field is a type, or a table saying how it came to be
                    // (DESIGN §18): { type = "string?", renamed_from = "notes" }.
                    var declared = ft[fname]?.tomlValue.string
                    if let t = ft[fname]?.tomlValue.table {
                        let fkey = "\(ekey).fields.\(fname)"
                        unknownKeys(t, ["type", "renamed_from", "convert"], at: fkey)
                        declared = string(t, "type", at: "\(fkey).type")
                        if declared == nil {
                            problem("\(fkey).type", "is required: the field's type, such as \"string?\"")
                        }
                        if let old = string(t, "renamed_from", at: "\(fkey).renamed_from") {
                            fieldsRenamedFrom[fname] = old
                        }
                        if let expression = string(t, "convert", at: "\(fkey).convert") {
                            if expression.trimmingWhitespace().isEmpty {
                                problem("\(fkey).convert", "is empty: give the expression that computes the value")
                            } else {
                                fieldsConverted[fname] = expression
                            }
                        }
                        if declared == nil { continue }
                    }
                    guard let decl = declared else {
                        problem(
                            "\(ekey).fields.\(fname)",
                            "must be a type such as \"string\" or \"date?\", or a table { type = \"string?\", renamed_from = \"old\", convert = \"expression\" }"
                        )
                        continue
                    }
                    do { fields.append(try Field(name: fname, declaration: decl)) } catch let error as DepotError {
                        problem("\(ekey).fields.\(fname)", error.message)
                    } catch {
                        problem("\(ekey).fields.\(fname)", "\(error)")
                    }
                }
            } else {
                problem("\(ekey).fields", "is required: a table of field = \"type\"")
            }
            let relationships = readRelationships(e, at: "\(ekey).relationships")
            declarations.append(
                (
                    ekey,
                    {
                        var d = EntityDeclaration(
                            name: ename, fields: fields, identifier: identifier,
                            indexes: indexes, preserveOnDelete: preserve, history: history,
                            relationships: relationships)
                        d.renamedFrom = string(e, "renamed_from", at: "\(ekey).renamed_from")
                        d.fieldsRenamedFrom = fieldsRenamedFrom
                        d.fieldsConverted = fieldsConverted
                        return d
                    }()
                ))
        }
        // The relationships are checked between entities, then each entity
        // is built with its to-ones' columns (DESIGN §12).
        var entities: [EntitySchema] = []
        let between = EntityDeclaration.problems(in: declarations.map(\.declaration))
        for p in between { problem("\(key).entity", p) }
        if between.isEmpty {
            for (built, (ekey, _)) in zip(EntityDeclaration.resolveEach(declarations.map(\.declaration)), declarations)
            {
                switch built {
                case .success(let entity): entities.append(entity)
                case .failure(let error as DepotError): problem(ekey, error.message)
                case .failure(let error): problem(ekey, "\(error)")
                }
            }
        }
        var config = StoreConfiguration(name: name, path: path, entities: entities)
        config.postgres = readBackend(table, at: key, name: name)
        config.adaptiveSaves = table["save_every"] == nil && table["save_interval"] == nil
        if let every = int(table, "save_every", at: "\(key).save_every", in: 1...Int(Int32.max)) {
            config.saveEvery = every
        }
        if let interval = duration(table, "save_interval", at: "\(key).save_interval", in: DurationText.saveInterval) {
            config.saveInterval = interval
        }
        if let retention = duration(
            table, "history_retention", at: "\(key).history_retention",
            in: DurationText.retention)
        {
            config.historyRetention = retention
        }
        if let maximum = duration(
            table, "history_max_retention", at: "\(key).history_max_retention",
            in: DurationText.retention)
        {
            config.historyMaxRetention = maximum
        }
        if let most = int(table, "max_save_changes", at: "\(key).max_save_changes", in: 1...1_000_000) {
            config.maxSaveChanges = most
        }
        if let retention = duration(
            table, "idempotency_retention", at: "\(key).idempotency_retention", in: DurationText.retention)
        {
            config.idempotencyRetention = retention
        }
        // At most 64 GiB: more than this machine class has, and far from overflowing the shift.
        if let mb = int(table, "cache_mb", at: "\(key).cache_mb", in: 1...65_536) {
            config.writerCacheBytes = mb << 20
        }
        config.backupSchedule = readBackupSchedule(table, at: key, onPostgreSQL: config.postgres != nil)
        if let text = string(table, "durability", at: "\(key).durability") {
            if let durability = StoreConfiguration.Durability(rawValue: text) {
                config.durability = durability
            } else {
                problem(
                    "\(key).durability",
                    "must be full (every answered commit survives a power loss) or normal "
                        + "(the last commits before a power loss may be lost), not \(JSONText.quoted(text))")
            }
        }
        return config
    }

    /// A store's `[store.backup]` (DESIGN §20): `every` (from 1s to 365d)
    /// and `keep` (from 1 to 10,000, default 7); nil when the table is not there.
    mutating func readBackupSchedule(_ table: TOMLTable, at key: String, onPostgreSQL: Bool)
        -> StoreConfiguration.BackupSchedule?
    {
        guard let value = table["backup"] else { return nil }
        let bkey = "\(key).backup"
        guard let backup = value.tomlValue.table else {
            problem(bkey, "must be a table ([store.backup])")
            return nil
        }
        unknownKeys(backup, ["every", "keep"], at: bkey)
        if onPostgreSQL {
            problem(bkey, "is for an SQLite store; PostgreSQL backs up a store on it (base backups, WAL archiving)")
            return nil
        }
        guard backup["every"] != nil else {
            problem("\(bkey).every", "is required: how often to back the store up, such as \"24h\"")
            return nil
        }
        guard let every = duration(backup, "every", at: "\(bkey).every", in: .seconds(1)...(.seconds(365 * 86_400)))
        else { return nil }
        let keep = int(backup, "keep", at: "\(bkey).keep", in: 1...10_000) ?? 7
        return StoreConfiguration.BackupSchedule(every: every, keep: keep)
    }

    /// A store's backend (DESIGN §15): nil for SQLite (the default), or
    /// where on PostgreSQL it lives, checked as the store will open it.
    mutating func readBackend(_ table: TOMLTable, at key: String, name: String) -> PostgresSettings? {
        let backend = string(table, "backend", at: "\(key).backend") ?? "sqlite"
        switch backend {
        case "sqlite":
            for k in ["url", "schema", "password_file", "lease"] where table[k] != nil {
                problem("\(key).\(k)", "is for a store on PostgreSQL (backend = \"postgresql\")")
            }
            return nil
        case "postgresql":
            if table["path"] != nil {
                problem("\(key).path", "is for an SQLite store; a store on PostgreSQL is named by url and schema")
            }
            if table["cache_mb"] != nil { problem("\(key).cache_mb", "is for an SQLite store") }
            if table["durability"] != nil {
                problem(
                    "\(key).durability",
                    "is for an SQLite store; a store on PostgreSQL has the server's "
                        + "synchronous_commit")
            }
            guard let url = string(table, "url", at: "\(key).url") else {
                problem(
                    "\(key).url",
                    "is required for a store on PostgreSQL, such as "
                        + "\"postgresql://depot@/depot?host=/run/postgresql\"")
                return nil
            }
            var settings = PostgresSettings(
                url: url, schema: string(table, "schema", at: "\(key).schema") ?? name,
                passwordFile: string(table, "password_file", at: "\(key).password_file"))
            if let lease = duration(table, "lease", at: "\(key).lease", in: .seconds(1)...(.seconds(3_600))) {
                settings.lease = lease
            }
            do {
                // The URL, schema and password file checked now, the server reached at open.
                _ = try PostgresLocation(settings)
            } catch let error as DepotError {
                problem("\(key).url", error.message)
            } catch {
                problem("\(key).url", "\(error)")
            }
            return settings
        default:
            problem("\(key).backend", "must be \"sqlite\" or \"postgresql\", not \(JSONText.quoted(backend))")
            return nil
        }
    }
}
