import ChildProcessSupport
import Foundation
import Testing

@Suite("depotctl against a real depotd", .serialized, .timeLimit(.minutes(5)))
struct CtlTests {
    /// Every command's --help, compared with Golden/help-*.txt.
    /// `DEPOT_UPDATE_GOLDEN=1 swift test --filter CtlTests` rewrites them.
    @Test("--help of every command matches its golden file, explains each option and shows an example")
    func help() throws {
        let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden")
        let update = ProcessInfo.processInfo.environment["DEPOT_UPDATE_GOLDEN"] == "1"
        let commands = [
            [], ["status"], ["import"], ["jobs"], ["job"], ["follow"], ["cancel"], ["fetch"], ["count"], ["ids"],
            ["stats"], ["duplicates"], ["delete"], ["update"], ["export"], ["history"], ["history", "list"],
            ["history", "prune"], ["consumers"], ["consumer"], ["consumer", "create"], ["consumer", "ack"],
            ["consumer", "reset"], ["consumer", "drop"], ["watches"], ["check"], ["save"], ["get"], ["set"], ["rm"],
            ["revert"], ["processors"], ["infer"], ["migrate"], ["console"], ["backup"], ["backup", "create"],
            ["backup", "list"]
        ]
        for command in commands {
            let result = try Ctl.run(command + ["--help"], socket: nil)
            #expect(result.status == 0)
            #expect(result.out.contains("Example:"), "\(command) --help shows no example")
            // Each option's help is a sentence: it ends with a full stop.
            for line in result.out.split(separator: "\n") where line.hasPrefix("  -") && line.count < 26 {
                Issue.record("\(command): option \(line) has no explanation")
            }
            let file = golden.appendingPathComponent(
                "help-" + (command.isEmpty ? "depotctl" : command.joined(separator: "-")) + ".txt")
            if update {
                try FileManager.default.createDirectory(at: golden, withIntermediateDirectories: true)
                try Data(result.out.utf8).write(to: file)
            } else {
                #expect(
                    result.out == (try String(contentsOf: file, encoding: .utf8)),
                    "\(command) --help differs from \(file.lastPathComponent)")
            }
        }
    }

    @Test("revert: a computed update taken back by its job through depotd; a token never issued refused with exit 1")
    func revert() throws {
        let config = DaemonProcess.config().replacingOccurrences(
            of: "preserve_on_delete = [\"name\"]", with: "preserve_on_delete = [\"name\"]\n  history = \"values\"")
        let d = try DaemonProcess(config: config)
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        func ctl(_ args: String...) throws -> Ctl.Result {
            let r = try Ctl.run(args, socket: d.socket)
            #expect(r.status == 0, "depotctl \(args.joined(separator: " ")): \(r.err)")
            return r
        }
        let file = d.folder.appendingPathComponent("trips.csv")
        try Data(tripsCSV(20).utf8).write(to: file)
        _ = try ctl("import", file.path, "--store", "travel", "--entity", "Trip")
        let budgets = try ctl("fetch", "travel", "Trip", "--fields", "id,budget", "--sort", "id", "--format", "csv").out
        let raised = try ctl(
            "update", "travel", "Trip", "--where", "budget < 10", "--compute", "budget=budget * 2", "--json")
        let id = try #require(raised.json["id"] as? String)
        #expect(raised.json["updated"] as? Int == 10)
        #expect(
            try ctl("revert", "travel", "--job", id).out
                == "reverted job \(id) of travel: 0 inserted again, 10 set back, 0 deleted\n")
        #expect(
            try ctl("fetch", "travel", "Trip", "--fields", "id,budget", "--sort", "id", "--format", "csv").out
                == budgets)
        let unknown = try Ctl.run(["revert", "travel", "--token", "999"], socket: d.socket)
        #expect(unknown.status == 1)
        #expect(unknown.err.contains("token 999 was never issued"), "\(unknown.err)")
        let both = try Ctl.run(["revert", "travel", "--token", "1", "--job", id], socket: d.socket)
        #expect(both.status == 64)
    }

    @Test("shell completion scripts come from the command tree; bash's parses")
    func completions() throws {
        for shell in ["bash", "zsh", "fish"] {
            let script = try Ctl.run(["--generate-completion-script", shell], socket: nil)
            #expect(script.status == 0)
            for command in ["import", "fetch", "history", "duplicates", "watches"] {
                #expect(script.out.contains(command), "\(shell) completion lacks \(command)")
            }
            if shell == "bash" {
                let file = FileManager.default.temporaryDirectory.appendingPathComponent(
                    "depotctl-\(UUID().uuidString).bash")
                try Data(script.out.utf8).write(to: file)
                defer { try? FileManager.default.removeItem(at: file) }
                let check = Process()
                check.executableURL = URL(fileURLWithPath: "/bin/bash")
                check.arguments = ["-n", file.path]
                try check.runClosingFiles()
                check.waitForExit()
                #expect(check.exitStatus == 0)
            }
        }
    }

    @Test("--socket and --json work before the subcommand too, for every command, history prune included")
    func socketFirst() throws {
        let d = try DaemonProcess()
        defer { d.stop() }
        let file = d.folder.appendingPathComponent("inbox/first.csv")
        try Data(tripsCSV(5).utf8).write(to: file)
        // DEPOT_SOCKET names nothing: only the option can reach the daemon.
        func ctl(_ args: [String]) throws -> Ctl.Result { try Ctl.run(args, socket: "/nonexistent/depot.sock") }
        let imported = try ctl(["--socket", d.socket, "import", file.path, "--store", "travel", "--entity", "Trip"])
        #expect(imported.status == 0, "\(imported.err)")
        let commands: [[String]] = [
            ["status"], ["jobs"], ["count", "travel", "Trip"], ["fetch", "travel", "Trip", "--limit", "1"],
            ["ids", "travel", "Trip"], ["stats", "travel", "Trip", "--field", "budget"],
            ["duplicates", "travel", "Trip", "--by", "name"], ["history", "travel", "--limit", "1"],
            ["history", "list", "travel", "--limit", "1"], ["history", "prune", "travel", "--older-than", "36500d"],
            ["watches"], ["update", "travel", "Trip", "--where", "id == 't1'", "--set", "budget=5"]
        ]
        for command in commands {
            for prefix in [["--socket", d.socket], ["--socket=\(d.socket)", "--json"], ["--json", "--socket", d.socket]]
            {
                let r = try ctl(prefix + command)
                #expect(r.status == 0, "\(prefix + command): \(r.err)")
                if prefix.contains("--json"), command != ["history", "travel", "--limit", "1"],
                    command != ["history", "list", "travel", "--limit", "1"]
                {
                    #expect(!r.json.isEmpty || r.out.hasPrefix("{"), "\(prefix + command): \(r.out)")
                }
            }
        }
        // After the subcommand, as before; a wrong socket first is still an error.
        #expect(try ctl(["count", "travel", "Trip", "--socket", d.socket, "--json"]).json["count"] as? Int == 5)
        #expect(try ctl(["--socket", "/tmp/none.sock", "status"]).err.contains("no daemon at /tmp/none.sock"))
    }

    @Test("values past Int's range print in tables and statistics instead of trapping")
    func hugeValues() throws {
        let d = try DaemonProcess()
        defer { d.stop() }
        let file = d.folder.appendingPathComponent("inbox/huge.csv")
        try Data(
            "id,name,startDate,budget,isFavorite\nh1,Huge,2025-01-01,1e300,true\nh2,Low,2025-01-02,-9.5e18,false\n".utf8
        ).write(to: file)
        #expect(
            try Ctl.run(["import", file.path, "--store", "travel", "--entity", "Trip"], socket: d.socket).status == 0)
        let table = try Ctl.run(["fetch", "travel", "Trip", "--fields", "id,budget"], socket: d.socket)
        #expect(table.status == 0, "\(table.err)")
        #expect(table.out.contains("1e+300"), "\(table.out)")
        let stats = try Ctl.run(["stats", "travel", "Trip", "--field", "budget"], socket: d.socket)
        #expect(stats.status == 0, "\(stats.err)")
    }

    /// The daemon may close the connection of a finished job's event stream
    /// before the client has written its request's end; depotctl once failed
    /// then with "I/O on closed channel".
    @Test("short jobs followed to their end: 300 updates in a row all succeed")
    func shortJobs() throws {
        let d = try DaemonProcess()
        defer { d.stop() }
        let file = d.folder.appendingPathComponent("inbox/short.csv")
        try Data(tripsCSV(5).utf8).write(to: file)
        #expect(
            try Ctl.run(["import", file.path, "--store", "travel", "--entity", "Trip"], socket: d.socket).status == 0)
        for i in 0..<300 {
            let r = try Ctl.run(
                ["update", "travel", "Trip", "--where", "id == 't1'", "--set", "budget=\(i + 1)"], socket: d.socket)
            // (A progress line may come first: jobs print one a second in a pipe.)
            #expect(
                r.status == 0 && r.out.hasSuffix("updated 1 record of travel.Trip (0 already so)\n"),
                "run \(i): \(r.out) \(r.err)")
            if r.status != 0 { break }
        }
        #expect(
            try Ctl.run(["count", "travel", "Trip", "--where", "budget == 300", "--json"], socket: d.socket).json[
                "count"] as? Int == 1)
    }

    @Test("consumers and a live fetch with changes: tables for people, NDJSON line by line through a pipe")
    func changeFeed() throws {
        let d = try DaemonProcess()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let file = d.folder.appendingPathComponent("inbox/feed.csv")
        try Data(tripsCSV(3).utf8).write(to: file)
        #expect(
            try Ctl.run(["import", file.path, "--store", "travel", "--entity", "Trip"], socket: d.socket).status == 0)
        let created = try Ctl.run(["consumer", "create", "travel", "indexer", "--from", "beginning"], socket: d.socket)
        #expect(
            created.status == 0 && created.out == "created consumer indexer at token 0: 1 transaction to read\n",
            "\(created.err)")
        #expect(
            try Ctl.run(["consumer", "create", "travel", "indexer"], socket: d.socket).err.contains(
                "already has a consumer"))
        let table = try Ctl.run(["consumers", "travel"], socket: d.socket)
        #expect(
            table.lines.first?.split(separator: " ", omittingEmptySubsequences: true)
                == ["NAME", "TOKEN", "LAG", "AGE", "ACKNOWLEDGED", "STATE"])
        #expect(table.lines.count == 2 && table.lines[1].hasPrefix("indexer") && table.lines[1].hasSuffix("active"))
        let history = try Ctl.run(["--json", "history", "travel", "--consumer", "indexer"], socket: d.socket)
        let token = ((history.json["transactions"] as? [[String: Any]])?.first?["token"] as? String) ?? ""
        #expect(!token.isEmpty)
        #expect(
            try Ctl.run(["history", "travel", "--consumer", "indexer", "--after", "1"], socket: d.socket).status == 64)
        let acked = try Ctl.run(["consumer", "ack", "travel", "indexer", token], socket: d.socket)
        #expect(acked.out == "acknowledged consumer indexer at token \(token): 0 transactions to read\n")
        #expect(
            try Ctl.run(["history", "travel", "--consumer", "indexer"], socket: d.socket).out
                == "consumer indexer has read everything\n")
        #expect(try Ctl.run(["--json", "consumers", "travel"], socket: d.socket).json["consumers"] is [Any])

        // A live fetch with changes through a pipe: each event is a line as it comes.
        var updated = false
        let live = try Ctl.live(
            [
                "fetch", "travel", "Trip", "--where", "destination == 'City 1'", "--watch", "--changes",
                "--json"
            ], socket: d.socket
        ) { line in
            if !updated {
                updated = true
                let update = try Ctl.run(
                    ["update", "travel", "Trip", "--where", "id == 't0'", "--set", "destination=City 1"],
                    socket: d.socket)
                #expect(update.status == 0)
                return true
            }
            return false
        }
        #expect(live.lines.count == 2)
        #expect(json(live.lines[0])["type"] as? String == "result")
        #expect((json(live.lines[1])["inserted"] as? [[String: Any]])?.first?["id"] as? String == "t0")
        #expect(try Ctl.run(["fetch", "travel", "Trip", "--changes"], socket: d.socket).status == 64)
        #expect(
            try Ctl.run(["fetch", "travel", "Trip", "--watch", "--changes", "--limit", "3"], socket: d.socket).status
                == 64)
        #expect(
            try Ctl.run(["fetch", "travel", "Trip", "--watch", "--changes", "--format", "csv"], socket: d.socket).status
                == 64)

        let prune = try Ctl.run(["history", "prune", "travel", "--older-than", "0s"], socket: d.socket)
        #expect(
            prune.lines.count == 2 && prune.lines[1].contains("consumer indexer has not acknowledged"), "\(prune.out)")
        #expect(try Ctl.run(["consumer", "reset", "travel", "indexer", "--from", "now"], socket: d.socket).status == 0)
        #expect(
            try Ctl.run(["consumer", "drop", "travel", "indexer"], socket: d.socket).out
                == "dropped consumer indexer of travel\n")
        let gone = try Ctl.run(["consumer", "drop", "travel", "indexer"], socket: d.socket)
        #expect(gone.status == 1 && gone.err.contains("has no consumer \"indexer\""))
    }

    @Test(
        "the errors: no daemon, unknown names with a suggestion, a predicate with a caret, a usage mistake, a failed job"
    )
    func errors() throws {
        let none = try Ctl.run(["count", "travel", "Trip"], socket: "/tmp/no-such-depot.sock")
        #expect(none.status == 1)
        #expect(none.err.hasPrefix("depotctl: no daemon at /tmp/no-such-depot.sock"))
        #expect(none.err.contains("--socket"))
        #expect(none.err.split(separator: "\n").count == 1)

        let d = try DaemonProcess()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let store = try Ctl.run(["count", "travl", "Trip"], socket: d.socket)
        #expect(store.status == 1)
        #expect(store.err.contains("did you mean \"travel\""))
        let entity = try Ctl.run(["fetch", "travel", "Trp"], socket: d.socket)
        #expect(entity.status == 1)
        #expect(entity.err.contains("did you mean \"Trip\""))
        let field = try Ctl.run(["count", "travel", "Trip", "--where", "budgt > 3"], socket: d.socket)
        #expect(field.status == 1)
        #expect(field.err.contains("did you mean \"budget\""))

        let predicate = try Ctl.run(["count", "travel", "Trip", "--where", "budget >"], socket: d.socket)
        #expect(predicate.status == 1)
        let lines = predicate.err.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines.dropFirst().first == "  budget >")
        #expect(lines.last == "  " + String(repeating: " ", count: 8) + "^")

        let usage = try Ctl.run(["import", "x.csv", "--entity", "Trip"], socket: d.socket)
        #expect(usage.status == 64)
        #expect(usage.err.contains("--store"))
        let badFormat = try Ctl.run(["fetch", "travel", "Trip", "--format", "xml"], socket: d.socket)
        #expect(badFormat.status == 64)

        let missing = try Ctl.run(
            ["import", "/nonexistent.csv", "--store", "travel", "--entity", "Trip"], socket: d.socket)
        #expect(missing.status == 1)
        #expect(missing.err.contains("not a file"))
        let bad = d.folder.appendingPathComponent("bad.csv")
        try Data("nothing,useful\n1,2\n".utf8).write(to: bad)
        let failed = try Ctl.run(["import", bad.path, "--store", "travel", "--entity", "Trip"], socket: d.socket)
        #expect(failed.status == 1)
        #expect(failed.err.contains("failed: the header of"))
        #expect(failed.err.contains("no column for identifier field"))
    }

    @Test("access refused by the daemon is one line saying which role is needed", .enabled(if: getuid() == 0))
    func refused() throws {
        let d = try DaemonProcess(
            config: DaemonProcess.config(socketMode: "0666", extra: "[access]\nread = [\"uid:65533\"]\n"))
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        p.arguments = [
            "--reuid=65533", "--regid=65533", "--clear-groups", Ctl.executable.path,
            "delete", "travel", "Trip", "--where", "TRUEPREDICATE", "--socket", d.socket
        ]
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try p.runClosingFiles()
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitForExit()
        #expect(p.exitStatus == 1)
        #expect(text.hasPrefix("depotctl: "))
        #expect(text.contains("write"))
        #expect(text.split(separator: "\n").count == 1)
    }

    @Test(
        "a whole session: import, jobs, queries, statistics, duplicates, changes, export, history, watches; --json shapes"
    )
    func session() throws {
        let d = try DaemonProcess(config: DaemonProcess.config(extra: WatchReloadTests.watch))
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        func ctl(_ args: String...) throws -> Ctl.Result {
            let r = try Ctl.run(args, socket: d.socket)
            #expect(r.status == 0, "depotctl \(args.joined(separator: " ")): \(r.err)")
            return r
        }
        let file = d.folder.appendingPathComponent("trips.csv")
        try Data((tripsCSV(30) + "t30,Bad,Oslo,2025-01-01,cheap,true\n").utf8).write(to: file)

        // import: follows to the end; --json prints the finished job's record.
        let imported = try ctl("import", file.path, "--store", "travel", "--entity", "Trip", "--json")
        let record = imported.json
        for key in ["id", "state", "inserted", "updated", "unchanged", "skipped", "rejected", "rejects"] {
            #expect(record[key] != nil, "the job record lacks \(key)")
        }
        #expect(record["state"] as? String == "succeeded")
        #expect(record["inserted"] as? Int == 30)
        #expect(record["rejected"] as? Int == 1)
        let id = record["id"] as? String ?? ""
        let human = try ctl("import", file.path, "--store", "travel", "--entity", "Trip")
        #expect(human.out.contains("imported trips.csv into travel.Trip: 31 read, 0 inserted, 0 updated, 30 unchanged"))
        #expect(!human.out.contains("\u{1B}"), "escape codes in a pipe")
        #expect(human.out.contains("depotctl job "))

        // job, --rejects, jobs, detach + follow.
        #expect(try ctl("job", id).out.contains("succeeded"))
        let rejects = try ctl("job", id, "--rejects", "--json")
        #expect(json(rejects.lines.first ?? "")["line"] as? Int == 32)
        #expect((json(rejects.lines.first ?? "")["reason"] as? String)?.contains("budget") == true)
        #expect(try ctl("job", id, "--rejects").out.contains("cheap"))
        #expect(try ctl("jobs").out.contains(id))
        #expect(((try ctl("jobs", "--json").json["jobs"] as? [Any])?.count ?? 0) == 2)
        let detached = try ctl("import", file.path, "--store", "travel", "--entity", "Trip", "--detach")
        let detachedID = detached.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(detachedID.hasPrefix("j"))
        #expect(try ctl("follow", detachedID).out.contains("job \(detachedID) succeeded"))

        // Queries.
        #expect(try ctl("count", "travel", "Trip", "--json").out == "{\"count\":30}\n")
        #expect(try ctl("count", "travel", "Trip", "--where", "isFavorite == true").out == "15\n")
        #expect(try ctl("count", "travel", "Trip").out == "30\n")
        let table = try ctl("fetch", "travel", "Trip", "--where", "budget >= 27", "--sort=-budget")
        #expect(table.lines.first?.hasPrefix("id") == true)
        #expect(table.lines.dropFirst().map { String($0.prefix(3)) } == ["t29", "t28", "t27"])
        let csv = try ctl(
            "fetch", "travel", "Trip", "--fields", "id,budget", "--sort", "id", "--limit", "2", "--format", "csv")
        #expect(csv.out == "id,budget\nt0,0.5\nt1,1.5\n")
        let ndjson = try ctl(
            "fetch", "travel", "Trip", "--fields", "id,name", "--sort", "id", "--limit", "1", "--format", "ndjson")
        #expect(ndjson.out == "{\"id\":\"t0\",\"name\":\"Trip 0\"}\n")
        #expect((try ctl("fetch", "travel", "Trip", "--limit", "3", "--json").json["records"] as? [Any])?.count == 3)
        let sections = try ctl(
            "fetch", "travel", "Trip", "--where", "budget < 2", "--section-by", "destination", "--fields", "id")
        #expect(sections.out.contains("City 0  1 record\n"))
        #expect(try ctl("ids", "travel", "Trip", "--sort", "-budget", "--limit", "2").out == "t29\nt28\n")
        let stats = try ctl("stats", "travel", "Trip", "--field", "budget", "--group-by", "isFavorite")
        #expect(
            stats.lines.first?.split(separator: " ").map(String.init) == [
                "isFavorite", "count", "sum", "avg", "min", "max"
            ])
        #expect(stats.out.contains("false"))

        // Duplicates: t1 takes t0's name, then one of the two goes.
        #expect(
            try ctl(
                "update", "travel", "Trip", "--where", "id == 't1'", "--set", "name=Trip 0", "--set", "isFavorite=yes"
            )
            .out == "updated 1 record of travel.Trip (0 already so)\n")
        let dupes = try ctl("duplicates", "travel", "Trip", "--by", "name")
        #expect(dupes.out.contains("t0, t1"))
        #expect(
            (try ctl("duplicates", "travel", "Trip", "--by", "name", "--json").json["groups"] as? [Any])?.count == 1)
        #expect(
            try ctl("duplicates", "travel", "Trip", "--by", "name", "--resolve", "keep-first").out.contains(
                "deleted 1 duplicate, kept the first"))
        #expect(
            try ctl("delete", "travel", "Trip", "--where", "budget < 3").out == "deleted 2 records from travel.Trip\n")
        let bool = try Ctl.run(
            ["update", "travel", "Trip", "--where", "id == 't5'", "--set", "isFavorite=perhaps"], socket: d.socket)
        #expect(bool.status == 1)
        #expect(bool.err.contains("isFavorite is a bool"))

        // Computed updates: a raise; an expression's error marked in the expression.
        #expect(
            try ctl("update", "travel", "Trip", "--where", "id == 't5'", "--compute", "budget=budget * 2").out
                == "updated 1 record of travel.Trip (0 already so)\n")
        #expect(
            try ctl("fetch", "travel", "Trip", "--where", "id == 't5'", "--fields", "budget", "--format", "csv").lines
                .last == "11")
        #expect(
            try ctl(
                "fetch", "travel", "Trip", "--where", "id == 't5'", "--fields", "id,budget", "--compute",
                "tax=budget * 0.5", "--format", "csv"
            ).out == "id,budget,tax\nt5,11,5.5\n")
        let typed = try Ctl.run(
            ["update", "travel", "Trip", "--where", "id == 't5'", "--compute", "budget=budget * name"], socket: d.socket
        )
        #expect(typed.status == 1)
        #expect(
            typed.err.split(separator: "\n").map(String.init) == [
                #"depotctl: compute "budget": * takes numbers, but this is string"#, "  budget * name",
                "  " + String(repeating: " ", count: 9) + "^"
            ], "\(typed.err)")

        // Export, to a file and to stdout.
        let out = d.folder.appendingPathComponent("out.csv")
        #expect(
            try ctl("export", "travel", "Trip", "--format", "csv", "-o", out.path).out.contains("exported 27 records"))
        #expect(try String(contentsOf: out, encoding: .utf8).split(whereSeparator: \.isNewline).count == 28)
        #expect(try ctl("export", "travel", "Trip", "--where", "id == 't9'").out.split(separator: "\n").count == 1)

        // History: oldest first, pages, shapes.
        let page = try ctl("history", "travel", "--limit", "2", "--json").json
        let transactions = page["transactions"] as? [[String: Any]] ?? []
        #expect(transactions.count == 2)
        #expect(transactions.first?["token"] as? String == "1")
        for key in ["token", "timestamp", "author", "changes"] {
            #expect(transactions.first?[key] != nil, "a transaction lacks \(key)")
        }
        let change = (transactions.first?["changes"] as? [[String: Any]])?.first ?? [:]
        #expect(Set(change.keys).isSuperset(of: ["entity", "identifier", "kind"]))
        let next = try ctl(
            "history", "travel", "--after", transactions.last?["token"] as? String ?? "", "--limit", "1", "--json"
        ).json
        let nextToken = Int((next["transactions"] as? [[String: Any]])?.first?["token"] as? String ?? "") ?? 0
        #expect(nextToken > Int(transactions.last?["token"] as? String ?? "") ?? Int.max)
        #expect(
            try ctl("history", "travel", "--limit", "1").out.contains(
                "next page: depotctl history travel --after 1 --limit 1"))
        #expect(
            try ctl("history", "prune", "travel", "--before", "2").out == "pruned 1 transaction from travel's history\n"
        )
        let expired = try Ctl.run(["history", "travel", "--after", "0"], socket: d.socket)
        #expect(expired.status == 1)

        // Watches and status.
        #expect(try ctl("watches").out.contains("travel.Trip"))
        #expect((try ctl("watches", "--json").json["watches"] as? [Any])?.count == 1)
        #expect(try ctl("status").out.contains("travel"))
        #expect(try ctl("status", "--json").json["stores"] != nil)
    }

    @Test(
        "live commands stream until Ctrl-C and exit 0: follow, fetch --watch, history --follow; cancel stops a queued job"
    )
    func live() throws {
        let d = try DaemonProcess()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let small = d.folder.appendingPathComponent("small.csv")
        try Data(tripsCSV(10).utf8).write(to: small)
        #expect(
            try Ctl.run(["import", small.path, "--store", "travel", "--entity", "Trip"], socket: d.socket).status == 0)

        // fetch --watch: the count now, then again after a change made meanwhile.
        var changed = false
        let watched = try Ctl.live(
            ["fetch", "travel", "Trip", "--where", "isFavorite == true", "--watch", "--json"], socket: d.socket
        ) { line in
            if !changed {
                changed = true
                _ = try Ctl.run(
                    ["update", "travel", "Trip", "--where", "id == 't1'", "--set", "isFavorite=true"], socket: d.socket)
                return true
            }
            return false
        }
        #expect(watched.status == 0)
        #expect(
            watched.lines.compactMap { ((json($0)["result"] as? [String: Any])?["records"] as? [Any])?.count } == [5, 6]
        )

        // history --follow: the past first, then what commits meanwhile.
        var deleted = false
        let followed = try Ctl.live(["history", "travel", "--follow", "--json"], socket: d.socket) { line in
            if json(line)["token"] as? String == "2" && !deleted {
                deleted = true
                _ = try Ctl.run(["delete", "travel", "Trip", "--where", "id == 't0'"], socket: d.socket)
            }
            return json(line)["token"] as? String != "3"
        }
        #expect(followed.status == 0)
        #expect(followed.lines.compactMap { json($0)["token"] as? String } == ["1", "2", "3"])

        // A big import runs; a job queued behind it is cancelled; follow sees the import through.
        let big = d.folder.appendingPathComponent("inbox/big.csv")
        try Data(tripsCSV(150_000, prefix: "b").utf8).write(to: big)
        let running = try Ctl.run(
            ["import", big.path, "--store", "travel", "--entity", "Trip", "--detach"], socket: d.socket)
        let runningID = running.out.trimmingCharacters(in: .whitespacesAndNewlines)
        let queued = try d.request(
            "POST", "/v1/jobs", body: #"{"kind":"delete","store":"travel","entity":"Trip","where":"TRUEPREDICATE"}"#)
        let queuedID = queued.object["id"] as? String ?? ""
        // What cancel says matches how the job ends: queued still, cancelled at
        // once; begun, it stops at its next save (or ends first); ended, as it ended.
        let cancelled = try Ctl.run(["cancel", queuedID], socket: d.socket)
        #expect(cancelled.status == 0)
        let end = try Ctl.run(["follow", queuedID], socket: d.socket)
        let jobs = try Ctl.run(["jobs", "--json"], socket: d.socket).json["jobs"] as? [[String: Any]] ?? []
        let final = jobs.first { $0["id"] as? String == queuedID }?["state"] as? String ?? ""
        if cancelled.out == "job \(queuedID) cancelled\n" {
            #expect(final == "cancelled")
            #expect(end.status == 1)
            #expect(end.err == "depotctl: job \(queuedID) was cancelled\n")
        } else if cancelled.out.hasPrefix("job \(queuedID) stops at its next save") {
            #expect(final == "cancelled" || final == "succeeded")
            #expect(end.status == (final == "succeeded" ? 0 : 1))
        } else {
            #expect(cancelled.out == "job \(queuedID) had already ended: \(final)\n")
        }
        var events = 0
        let follow = try Ctl.live(["follow", runningID, "--json"], socket: d.socket) { line in
            events += 1
            return !["succeeded", "failed"].contains(json(line)["state"] as? String ?? "")
        }
        #expect(follow.status == 0)
        #expect(json(follow.lines.last ?? "")["state"] as? String == "succeeded")
        #expect(events >= 1)
    }

    @Test(
        "on a terminal: a live progress bar and colours; NO_COLOR turns colours off; in a pipe, neither",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script")))
    func terminal() throws {
        let d = try DaemonProcess()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let file = d.folder.appendingPathComponent("big.csv")
        try Data(tripsCSV(200_000).utf8).write(to: file)
        let tty = try Ctl.onTerminal(["import", file.path, "--store", "travel", "--entity", "Trip"], socket: d.socket)
        #expect(tty.status == 0)
        // The bar redraws in place: carriage return, erase line, a bar, a percentage, counters.
        let frames = tty.out.components(separatedBy: "\r\u{1B}[K").filter { $0.contains("%") }
        #expect(frames.count >= 1)
        #expect(
            frames.contains {
                $0.hasPrefix("[") && $0.contains("] ") && $0.contains(" rows") && $0.contains("rejected")
            })
        #expect(tty.out.contains("imported big.csv into travel.Trip: 200,000 read, 200,000 inserted"))

        let colours = try Ctl.onTerminal(["jobs"], socket: d.socket)
        #expect(colours.out.contains("\u{1B}[1m"))
        #expect(colours.out.contains("\u{1B}[32msucceeded"))
        let plain = try Ctl.onTerminal(["jobs"], socket: d.socket, environment: ["NO_COLOR": "1"])
        #expect(!plain.out.contains("\u{1B}["))
        #expect(plain.out.contains("succeeded"))
        let piped = try Ctl.run(["jobs"], socket: d.socket)
        #expect(!piped.out.contains("\u{1B}"))
    }

    @Test("save: a change set from a file or stdin, a summary or --json; a refusal names each failing change, exit 1")
    func save() throws {
        let d = try DaemonProcess()
        defer { d.stop() }
        let file = d.folder.appendingPathComponent("changes.json")
        try Data(
            (#"{"changes": [{"insert": "Trip", "record": {"id": "T1", "name": "Rome", "startDate": "2025-05-02", "#
                + #""budget": 900, "isFavorite": false}}, {"upsert": "Trip", "record": {"id": "T2", "name": "Oslo", "#
                + #""startDate": "2025-06-01", "budget": 700, "isFavorite": true}}]}"#).utf8
        ).write(to: file)
        let saved = try Ctl.run(["save", "travel", file.path], socket: d.socket)
        #expect(saved.status == 0, "\(saved.err)")
        #expect(
            saved.out.hasPrefix("saved 2 changes to travel at token ") && saved.out.contains("2 inserted"),
            "\(saved.out)")
        // Standard input, --json: the daemon's answer.
        let update = try Ctl.run(
            ["--json", "save", "travel", "-"], socket: d.socket,
            stdin: #"{"changes": [{"update": "Trip", "identifier": "T1", "set": {"budget": 950}}]}"#)
        #expect(update.status == 0, "\(update.err)")
        #expect((update.json["changes"] as? [[String: Any]])?.first?["effect"] as? String == "updated", "\(update.out)")
        // A refusal: exit 1, each failing change named on stderr, nothing written.
        let refused = try Ctl.run(
            ["save", "travel", "-"], socket: d.socket,
            stdin: #"{"changes": [{"delete": "Trip", "identifier": "T2"}, {"insert": "Trip", "record": {"id": "T1"}}]}"#
        )
        #expect(refused.status == 1)
        #expect(refused.err.contains("change 1: Trip \"T1\" already exists"), "\(refused.err)")
        #expect(
            try Ctl.run(["count", "travel", "Trip"], socket: d.socket).out.trimmingCharacters(
                in: .whitespacesAndNewlines) == "2")
        let garbage = try Ctl.run(["save", "travel", "-"], socket: d.socket, stdin: "not json")
        #expect(garbage.status == 1 && garbage.err.contains("not a save's body"), "\(garbage.err)")
    }

    @Test("get, set and rm: one record with its token; --if-token conflicts list each field, exit 1")
    func records() throws {
        let d = try DaemonProcess(config: DaemonProcess.config(extra: RecordTests.seats))
        defer { d.stop() }
        let put = try d.request(
            "PUT", "/v1/stores/travel/entities/Trip/records/T1",
            body: #"{"name":"Rome","startDate":"2025-05-02","budget":900,"isFavorite":false}"#)
        #expect(put.status == 200)
        let got = try Ctl.run(["get", "travel", "Trip", "T1"], socket: d.socket)
        #expect(got.status == 0 && got.out.contains("name ") && got.out.contains("Rome"), "\(got.out)")
        let json = try Ctl.run(["--json", "get", "travel", "Trip", "T1"], socket: d.socket).json
        let token = json["token"] as? String ?? ""
        #expect(!token.isEmpty && (json["record"] as? [String: Any])?["budget"] as? Double == 900)
        // Text fields take the value as it is, others as JSON.
        let set = try Ctl.run(
            ["set", "travel", "Trip", "T1", "budget=950", "notes=123", "isFavorite=true"], socket: d.socket)
        #expect(set.status == 0 && set.out.hasPrefix("Trip T1: updated at token "), "\(set.out) \(set.err)")
        let now =
            try Ctl.run(["--json", "get", "travel", "Trip", "T1"], socket: d.socket).json["record"] as? [String: Any]
        #expect(
            now?["notes"] as? String == "123" && now?["isFavorite"] as? Bool == true && now?["budget"] as? Double == 950
        )
        // Read at the old token: the same field conflicts, with its values on stderr.
        let clash = try Ctl.run(["set", "travel", "Trip", "T1", "budget=990", "--if-token", token], socket: d.socket)
        #expect(clash.status == 1 && clash.err.contains("budget: was (not kept), now 950"), "\(clash.err)")
        #expect(clash.err.contains("yours 990"))
        let merged = try Ctl.run(
            ["set", "travel", "Trip", "T1", "budget=990", "--if-token", token, "--merge", "object-trump"],
            socket: d.socket)
        #expect(merged.status == 0, "\(merged.err)")
        let wrong = try Ctl.run(["set", "travel", "Trip", "T1", "budget=lots"], socket: d.socket)
        #expect(wrong.status == 1 && wrong.err.contains("budget"), "\(wrong.err)")
        #expect(try Ctl.run(["set", "travel", "Trip", "T1", "nope=1"], socket: d.socket).status == 1)
        // A compound identifier, as its JSON array.
        #expect(
            try d.request(
                "PUT", "/v1/stores/travel/entities/Seat/records/%5B%22AF1%22%2C12%5D", body: #"{"holder":"Ada"}"#
            ).status == 200)
        let seat = try Ctl.run(["set", "travel", "Seat", #"["AF1",12]"#, "holder=Bo"], socket: d.socket)
        #expect(seat.status == 0, "\(seat.err)")
        let removed = try Ctl.run(["rm", "travel", "Seat", #"["AF1",12]"#], socket: d.socket)
        #expect(removed.status == 0 && removed.out.contains("deleted"), "\(removed.out)")
        let missing = try Ctl.run(["get", "travel", "Seat", #"["AF1",12]"#], socket: d.socket)
        #expect(missing.status == 1 && missing.err.contains("no Seat"), "\(missing.err)")
        let again = try Ctl.run(["rm", "travel", "Seat", #"["AF1",12]"#], socket: d.socket)
        #expect(again.status == 1 && again.err.contains(#"there is no Seat ["AF1",12]"#), "\(again.err)")
    }
}
