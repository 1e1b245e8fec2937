import DepotWire
import Foundation
import Testing

import enum DepotEngine.SchemaInference

/// Issue 30, item 4: docs/openapi.yaml and the wire types agree: every
/// operation's JSON request and answer is a wire type, and each schema
/// has exactly the fields its type writes, at every depth.
@Suite("docs/openapi.yaml and DepotWire agree")
struct WireAgreementTests {
    /// A value of each wire type with every optional field set, as JSON.
    static func json(_ value: some Encodable) throws -> Any {
        try JSONSerialization.jsonObject(with: JSONEncoder().encode(value), options: .fragmentsAllowed)
    }

    static let record: RecordObject = ["id": "t1", "budget": 1200.5, "customer": ["name": "Ada"]]

    static var job: Job {
        var job = Job(
            id: "j1", kind: "import", store: "travel", state: .running, author: "ada",
            created: "2026-11-26T10:00:00.000Z")
        job.entity = "Trip"
        job.started = "2026-11-26T10:00:01.000Z"
        job.finished = "2026-11-26T10:00:02.000Z"
        job.settings = settings
        job.watchFile = "/srv/inbox/trips.csv"
        job.contentHash = "ab12"
        job.eta = 3
        job.error = "none"
        job.rejects = "/var/lib/depot/rejects/j1.ndjson"
        job.heldBackBy = .init(consumer: "indexer", token: "41")
        job.lostConsumers = ["old"]
        job.backup = BackupManifest(
            store: "travel", file: "travel-20261129T081500123Z.sqlite", token: "41", time: "2026-11-29T08:15:00.120Z",
            depotVersion: "0.9.0", systemVersion: 9, entities: ["Trip": 3], bytes: 4096, sha256: "9f8e",
            verified: true, job: "j1")
        return job
    }

    static var settings: JobSettings {
        var s = JobSettings()
        s.path = "/srv/inbox/trips.csv"
        s.format = "csv"
        s.onConflict = "upsert"
        s.maxRejects = "1%"
        s.references = "defer"
        s.prefetch = ["customer"]
        s.delimiter = ";"
        s.quote = "'"
        s.escape = "\\"
        s.header = false
        s.quotes = "lenient"
        s.skipInitialSpace = true
        s.nulls = ["NA"]
        s.columns = ["Trip ID": "Trip_ID"]
        s.encoding = "latin-1"
        s.where = "budget > $min"
        s.arguments = ["min": 1]
        s.set = ["isFavorite": true]
        s.compute = ["budget": "budget * 1.1"]
        s.token = "41"
        s.job = "j5c1e0d2a9b3f"
        s.by = ["name"]
        s.keep = "keep-first"
        s.before = "41"
        s.olderThan = "7d"
        s.verify = true
        return s
    }

    /// A save's answer, replayed.
    static var saved: SaveAnswer {
        SaveAnswer(
            token: "42",
            changes: [.init(index: 0, entity: "Trip", identifier: "T1", kind: "update", effect: "updated")],
            replayed: true)
    }

    static var fetch: FetchBody {
        var f = FetchBody()
        f.where = "budget > $min"
        f.arguments = ["min": 1]
        f.sort = ["-budget"]
        f.nulls = "last"
        f.limit = 10
        f.offset = 0
        f.fields = ["id"]
        f.computed = [ComputedFetchField(name: "twice", expression: "budget * 2")]
        f.sectionBy = "destination"
        f.prefetch = ["customer"]
        f.result = "records"
        f.watch = true
        f.changes = true
        f.since = "41"
        f.after = [12.5, "t1"]
        f.identifiers = ["t1", ["a", 2]]
        return f
    }

    static var aggregate: AggregateBody {
        var a = AggregateBody()
        a.field = "budget"
        a.functions = ["avg"]
        a.groupBy = ["destination"]
        a.where = "budget > 0"
        a.arguments = ["x": 1]
        return a
    }

    static var duplicates: DuplicatesBody {
        var d = DuplicatesBody(by: ["name"])
        d.where = "budget > 0"
        d.arguments = ["x": 1]
        d.limit = 5
        return d
    }

    static var export: ExportBody {
        var e = ExportBody()
        e.where = "budget > 0"
        e.arguments = ["x": 1]
        e.fields = ["id"]
        e.format = "csv"
        e.prefetch = ["customer"]
        return e
    }

    static var transaction: HistoryTransaction {
        HistoryTransaction(
            token: "41", timestamp: "2026-11-26T10:00:00.000Z", author: "ada", job: "j1", continues: true,
            changes: [
                HistoryChange(
                    entity: "Trip", identifier: "t1", kind: .update, fields: ["budget"], tombstone: ["name": "x"],
                    old: ["budget": 1], new: ["budget": 2])
            ])
    }

    static var store: StoreInfo {
        StoreInfo(
            name: "travel", path: "/var/lib/depot/travel.sqlite", token: "41",
            entities: [
                EntityInfo(
                    name: "Order", count: 3, identifier: ["id"], indexes: [["customer"]],
                    fields: [.init(name: "id", type: "string")],
                    relationships: [
                        .init(
                            name: "customer", to: "Customer", kind: "to-one", required: true, columns: ["customer"],
                            inverse: "orders", delete: "cascade")
                    ])
            ])
    }

    static var consumer: Consumer {
        Consumer(
            name: "indexer", token: "41", lagTransactions: 2, lagSeconds: 1.5,
            acknowledgedAt: "2026-11-26T10:00:00.000Z", state: "active")
    }

    static var processor: ProcessorState {
        ProcessorState(
            name: "geocode", entity: "Trip", where: "lat == nil", batch: 500, lease: "30s",
            created: "2026-11-26T10:00:00.000Z", total: 1_000, done: 500, batches: 2, batchesDone: 1, leased: 1,
            lastCommit: "2026-11-26T10:00:01.000Z", rate: 500, eta: 1, state: "running")
    }

    /// What each operation takes and answers: the JSON of a full value of
    /// its wire types (several answers where the schema is `oneOf`); nil
    /// where the body is not JSON (text, CSV, NDJSON records, an upload).
    /// An infer answer as the engine writes it, for a file with every part:
    /// a rename, nulls, evidence, a problem, quotes escaped by a backslash.
    static func inference() throws -> InferAnswer {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("wire-\(UUID().uuidString).csv")
        try Data("Trip ID,n,s\n1,5,\"a \\\"b\\\" c\"\n2,NA,\n3,x,\n4\n".utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let found = try SchemaInference.infer(path: url.path)
        return try JSONDecoder().decode(InferAnswer.self, from: Data(found.json(toml: true).utf8))
    }

    static func operations() throws -> [String: (request: Any?, answers: [Any])] {
        [
            "GET /v1/health": (
                nil,
                [
                    try json(
                        Health(
                            status: "ok", stores: [.init(name: "travel", ok: true)],
                            jobs: .init(running: 1, queued: 0)))
                ]
            ),
            "GET /v1/metrics": (nil, []),
            "GET /v1/me": (nil, [try json(Identity(uid: 65533, user: nil, role: "read"))]),
            "GET /v1/figures": (
                nil,
                [
                    try json(
                        FigureList(
                            interval: 10,
                            samples: [
                                FigureSample(
                                    time: "2026-11-27T10:00:00.000Z", rowsPerSecond: 1_200.5, saveMilliseconds: 2.5,
                                    saves: 4, importSaveMilliseconds: nil, consumerLag: 3),
                                FigureSample(
                                    time: "2026-11-27T10:00:10.000Z", rowsPerSecond: 0, saveMilliseconds: nil,
                                    saves: 0, importSaveMilliseconds: 120, consumerLag: nil)
                            ]))
                ]
            ),
            "GET /console": (nil, []),
            "GET /console/{file}": (nil, []),
            "GET /v1/stores": (nil, [try json(StoreList(stores: [store]))]),
            "GET /v1/stores/{store}": (nil, [try json(store)]),
            "PUT /v1/stores/{store}/entities/{entity}": (
                try JSONSerialization.jsonObject(
                    with: Data(
                        #"{"name": "Codes", "identifier": "code", "fields": {"code": "string"}, "indexes": [["code"]], "history": "values", "convert": {"code": "uppercase:(code)"}}"#
                            .utf8)),
                [try json(store.entities[0])]
            ),
            "DELETE /v1/stores/{store}/entities/{entity}": (nil, []),
            "GET /v1/stores/{store}/check": (
                nil,
                [
                    try json(
                        ReferenceCheck(
                            total: 1,
                            relationships: [
                                .init(entity: "Order", relationship: "customer", to: "Customer", dangling: 1)
                            ],
                            dangling: [
                                .init(
                                    entity: "Order", identifier: "o1", relationship: "customer", to: "Customer",
                                    reference: "c9")
                            ]))
                ]
            ),
            "POST /v1/stores/{store}/entities/{entity}/fetch": (
                try json(fetch),
                [
                    try json(RecordsAnswer(records: [record])), try json(CountAnswer(count: 3)),
                    try json(IdentifiersAnswer(identifiers: ["t1"])),
                    try json(SectionsAnswer(sections: [.init(key: "Paris", records: [record])])),
                    try json(WatchEvent(token: "41", result: ["count": 3])),
                    try json(
                        ChangeEvent(
                            type: "changes", token: "41", records: [record], inserted: [record], updated: [record],
                            deleted: ["t2"], message: "m"))
                ]
            ),
            "POST /v1/stores/{store}/entities/{entity}/aggregate": (
                try json(aggregate),
                [
                    try json(
                        AggregateAnswer(rows: [
                            ["group": ["destination": "Paris"], "count": 2, "sum": 5, "avg": 2.5, "min": 1, "max": 4]
                        ]))
                ]
            ),
            "POST /v1/stores/{store}/entities/{entity}/duplicates": (
                try json(duplicates),
                [try json(DuplicatesAnswer(groups: [DuplicateGroup(values: ["x"], identifiers: ["t1", "t2"])]))]
            ),
            "POST /v1/stores/{store}/entities/{entity}/export": (try json(export), []),
            "POST /v1/stores/{store}/entities/{entity}/import": (nil, [try json(job)]),
            "POST /v1/infer": (nil, [try json(try inference())]),
            "POST /v1/stores/{store}/migrate": (
                ["dry_run": true, "entity": "Trip"] as [String: Any],
                [
                    try json(
                        MigrationAnswer(
                            store: "travel", dryRun: true,
                            entities: [
                                MigrationAnswer.Entity(
                                    entity: "Trip",
                                    changes: [
                                        MigrationAnswer.Change(
                                            field: "budget", from: "double", to: "int", convert: "trunc:(budget * 100)")
                                    ], records: 2, rejected: 1, fails: false,
                                    rejects: [
                                        MigrationAnswer.Reject(
                                            identifier: "t9", field: "budget",
                                            reason:
                                                "field \"budget\" is int, and the computed value is out of the 64-bit range",
                                            value: 1e302)
                                    ])
                            ], jobs: [])),
                    try json(MigrationAnswer(store: "travel", dryRun: false, entities: [], jobs: [job]))
                ]
            ),
            "POST /v1/stores/{store}/save": (
                try json(
                    SaveBody(
                        author: "web", merge: "store-trump", idempotencyKey: "order-7781",
                        changes: [
                            SaveChange(.update, entity: "Trip", identifier: "T1", set: ["budget": 1], ifToken: "41")
                        ])),
                [try json(Self.saved)]
            ),
            "GET /v1/stores/{store}/entities/{entity}/records/{id}": (nil, [try json(Self.record)]),
            "GET /v1/stores/{store}/entities/{entity}/records/{id}/history": (
                nil, [try json(TransactionPage(transactions: [transaction]))]
            ),
            "PUT /v1/stores/{store}/entities/{entity}/records/{id}": (try json(Self.record), [try json(Self.saved)]),
            "PATCH /v1/stores/{store}/entities/{entity}/records/{id}": (try json(Self.record), [try json(Self.saved)]),
            "DELETE /v1/stores/{store}/entities/{entity}/records/{id}": (nil, [try json(Self.saved)]),
            "GET /v1/stores/{store}/history": (
                nil, [try json(TransactionPage(transactions: [transaction])), try json(transaction)]
            ),
            "DELETE /v1/stores/{store}/history": (
                nil,
                [try json(PruneAnswer(pruned: 3, heldBackBy: .init(consumer: "indexer", token: "41"), lost: ["old"]))]
            ),
            "GET /v1/stores/{store}/consumers": (nil, [try json(ConsumerList(consumers: [consumer]))]),
            "POST /v1/stores/{store}/consumers": (
                try json(ConsumerBody(name: "indexer", from: "now")), [try json(consumer)]
            ),
            "DELETE /v1/stores/{store}/consumers/{name}": (nil, [try json(DroppedConsumer(dropped: "indexer"))]),
            "POST /v1/stores/{store}/consumers/{name}/ack": (try json(AckBody(token: "41")), [try json(consumer)]),
            "POST /v1/stores/{store}/consumers/{name}/reset": (
                try json(ConsumerBody(from: "beginning")), [try json(consumer)]
            ),
            "GET /v1/stores/{store}/processors": (nil, [try json(ProcessorList(processors: [Self.processor]))]),
            "POST /v1/stores/{store}/processors": (
                try json(ProcessorBody(name: "geocode", entity: "Trip", where: "budget > 1", batch: 500, lease: "30s")),
                [try json(Self.processor)]
            ),
            "DELETE /v1/stores/{store}/processors/{name}": (nil, []),
            "POST /v1/stores/{store}/processors/{name}/next": (
                nil,
                [try json(ProcessorBatchAnswer(lease: "0-ab", expires: "2026-01-01T00:00:30.000Z", records: []))]
            ),
            "POST /v1/stores/{store}/processors/{name}/commit": (
                try json(
                    ProcessorCommitBody(
                        lease: "0-ab",
                        changes: [
                            SaveChange(.update, entity: "Trip", identifier: "T1", set: ["budget": 1], ifToken: "41")
                        ],
                        author: "me", merge: "error")),
                [try json(ProcessorCommitAnswer(token: "41", changes: [], processor: Self.processor))]
            ),
            "GET /v1/jobs": (nil, [try json(JobList(jobs: [job]))]),
            "POST /v1/jobs": (
                try json(JobRequest(kind: "import", store: "travel", entity: "Trip", settings: settings)),
                [try json(job)]
            ),
            "GET /v1/jobs/{id}": (nil, [try json(job)]),
            "DELETE /v1/jobs/{id}": (nil, [try json(job)]),
            "GET /v1/jobs/{id}/events": (nil, [try json(job)]),
            "GET /v1/jobs/{id}/rejects": (
                nil, [try json(RejectedRecord(line: 3, field: "budget", reason: "not a number", value: "x"))]
            ),
            "GET /v1/jobs/{id}/output": (nil, []),
            "GET /v1/watches": (
                nil,
                [
                    try json(
                        WatchList(watches: [
                            Watch(
                                path: "/srv/inbox", store: "travel", entity: "Trip", format: "auto",
                                onConflict: "upsert", maxRejects: "0", references: "check", deleteAfter: false,
                                pending: 0, done: 1, failed: 0)
                        ]))
                ]
            ),
            "GET /v1/events": (nil, [try json(JobEvent(job: job))])
        ]
    }

    /// A schema with its `$ref`s followed.
    static func resolve(_ node: Any?, in document: [String: Any]) -> [String: Any]? {
        guard var map = node as? [String: Any] else { return nil }
        while let ref = map["$ref"] as? String {
            var target: Any? = document
            for part in ref.dropFirst(2).split(separator: "/") { target = (target as? [String: Any])?[String(part)] }
            guard let next = target as? [String: Any] else { return nil }
            map = next
        }
        return map
    }

    /// The object schemas `schema` may be: itself, or its `oneOf`/`anyOf` alternatives.
    static func alternatives(_ schema: [String: Any], in document: [String: Any]) -> [[String: Any]] {
        let options = (schema["oneOf"] as? [Any]) ?? (schema["anyOf"] as? [Any])
        guard let options else { return [schema] }
        return options.compactMap { resolve($0, in: document) }.flatMap { alternatives($0, in: document) }
    }

    /// Where `value` and `schema` disagree: a field one has and the other has not, at any depth.
    static func differences(_ value: Any, _ schema: [String: Any]?, at path: String, in document: [String: Any])
        -> [String]
    {
        guard let schema else { return [] }
        if let object = value as? [String: Any] {
            let candidates = alternatives(schema, in: document).filter { $0["properties"] != nil }
            guard !candidates.isEmpty else { return [] }  // a free object (records, set, group)
            // The alternative with exactly these fields, else the closest.
            let scored = candidates.map { c -> ([String], [String: Any]) in
                let documented = Set((c["properties"] as? [String: Any] ?? [:]).keys)
                let written = Set(object.keys)
                let issues =
                    written.subtracting(documented).sorted().map { "\(path).\($0) is written but not documented" }
                    + documented.subtracting(written).sorted().map { "\(path).\($0) is documented but not written" }
                return (issues, c)
            }
            let (issues, best) = scored.min { $0.0.count < $1.0.count }!
            guard issues.isEmpty else { return issues }
            let properties = best["properties"] as? [String: Any] ?? [:]
            return object.keys.sorted().flatMap { key in
                differences(object[key]!, resolve(properties[key], in: document), at: "\(path).\(key)", in: document)
            }
        }
        if let array = value as? [Any], let first = array.first {
            for candidate in alternatives(schema, in: document) {
                if let items = resolve(candidate["items"], in: document) {
                    return differences(first, items, at: path + "[]", in: document)
                }
            }
        }
        return []
    }

    /// An operation's JSON request schema and its 2xx answer schemas.
    static func schemas(_ operation: [String: Any], in document: [String: Any]) -> (
        request: [String: Any]?, answers: [[String: Any]]
    ) {
        let request = ((operation["requestBody"] as? [String: Any])?["content"] as? [String: Any])?[
            "application/json"]
        var answers: [[String: Any]] = []
        for (status, response) in operation["responses"] as? [String: Any] ?? [:] where status.hasPrefix("2") {
            let content = resolve(response, in: document)?["content"] as? [String: Any] ?? [:]
            // JSON values; a body documented as text (CSV, lines of records) is not one.
            for (type, media) in content where type.contains("json") {
                if let schema = resolve((media as? [String: Any])?["schema"], in: document),
                    schema["type"] as? String != "string"
                {
                    answers.append(schema)
                }
            }
        }
        return (resolve((request as? [String: Any])?["schema"], in: document), answers)
    }

    @Test("every operation has wire types, and every schema has exactly the fields its type writes")
    func everyOperationEveryField() throws {
        let document = try OpenAPITests.document()
        let table = try Self.operations()
        #expect(Set(table.keys) == (try OpenAPITests.documented()), "operations without wire types, or gone")
        let paths = document["paths"] as? [String: Any] ?? [:]
        var checked = 0
        for (name, wire) in table.sorted(by: { $0.key < $1.key }) {
            let parts = name.split(separator: " ", maxSplits: 1).map(String.init)
            guard let operation = (paths[parts[1]] as? [String: Any])?[parts[0].lowercased()] as? [String: Any]
            else { continue }
            let (request, answers) = Self.schemas(operation, in: document)
            if let body = wire.request {
                #expect(request != nil, "\(name): a JSON request body that is not documented")
                #expect(Self.differences(body, request, at: name + " request", in: document) == [])
                checked += 1
            } else {
                #expect(request == nil, "\(name): a documented JSON request body without a wire type")
            }
            #expect(answers.isEmpty == wire.answers.isEmpty, "\(name): JSON answers and wire types differ")
            for answer in wire.answers {
                // Each answer fits one of the documented JSON answers.
                let issues = answers.map { Self.differences(answer, $0, at: name, in: document) }
                #expect(issues.contains([]), "\(name): \(issues.min { $0.count < $1.count } ?? [])")
                checked += 1
            }
        }
        #expect(checked > 30)
        // The error every operation may answer.
        let error = Self.resolve(["$ref": "#/components/schemas/Error"], in: document)
        let failure = try Self.json(
            ErrorAnswer(
                error: .init(
                    code: "save_refused", message: "m", position: 3,
                    changes: [
                        ChangeFailure(
                            index: 0, code: "conflict", field: "id", message: "m",
                            conflicts: [FieldConflict(field: "budget", base: 1, stored: 2, yours: 3)])
                    ])))
        #expect(Self.differences(failure, error, at: "Error", in: document) == [])
    }

    @Test(
        "an entity as a daemon before DESIGN §18 wrote it (no declared, no history) reads as declared in the configuration"
    )
    func olderEntityInfo() throws {
        let old =
            #"{"name":"Trip","count":1,"identifier":["id"],"indexes":[],"fields":[{"name":"id","type":"string"}],"relationships":[]}"#
        let entity = try JSONDecoder().decode(EntityInfo.self, from: Data(old.utf8))
        #expect(entity.declared == "config" && entity.history == "fields" && entity.fields.map(\.name) == ["id"])
        let again = try JSONDecoder().decode(EntityInfo.self, from: JSONEncoder().encode(Self.store.entities[0]))
        #expect(again == Self.store.entities[0])
    }

    @Test("the check finds a field the document lacks, and one it has but the type does not write")
    func checkCanFail() throws {
        let document = try OpenAPITests.document()
        let schema = Self.resolve(["$ref": "#/components/schemas/Consumer"], in: document)
        var extra = try Self.json(Self.consumer) as? [String: Any] ?? [:]
        extra["surplus"] = 1
        #expect(Self.differences(extra, schema, at: "C", in: document) == ["C.surplus is written but not documented"])
        extra["surplus"] = nil
        extra["state"] = nil
        #expect(Self.differences(extra, schema, at: "C", in: document) == ["C.state is documented but not written"])
    }
}

@Suite("depotctl on DepotClient's public API")
struct CtlPublicAPITests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
        .standardized

    static func sources(_ folder: String) throws -> [(name: String, text: String)] {
        let url = root.appendingPathComponent(folder)
        return try FileManager.default.contentsOfDirectory(atPath: url.path).filter { $0.hasSuffix(".swift") }.map {
            ($0, try String(contentsOf: url.appendingPathComponent($0), encoding: .utf8))
        }
    }

    /// The names DepotClient and DepotWire declare `package`: what the
    /// daemon may use and a client program may not.
    static func packageNames() throws -> Set<String> {
        var names = Set<String>()
        let pattern = try Regex(#"package (?:static )?(?:func|enum|struct|var|let) ([A-Za-z_]+)"#)
        for folder in ["Sources/DepotClient", "Sources/DepotWire"] {
            for (_, text) in try sources(folder) {
                for match in text.matches(of: pattern) {
                    if let name = match.output[1].substring { names.insert(String(name)) }
                }
            }
        }
        return names
    }

    @Test("depotctl calls none of DepotClient's package-only members (its transport, paths, bodies)")
    func publicOnly() throws {
        let names = try Self.packageNames()
        #expect(names.isSuperset(of: ["call", "lines", "exchange", "json", "RequestBody", "entityPath"]))
        var uses: [String] = []
        for (file, text) in try Self.sources("Sources/depotctl") {
            for name in names {
                for form in ["client.\(name)(", "DaemonClient.\(name)(", "DepotClient.\(name)(", "\(name)."]
                where name.first!.isUppercase || !form.hasSuffix(".") {
                    if text.contains(form) { uses.append("\(file): \(form)") }
                }
            }
        }
        #expect(uses == [])
    }
}
