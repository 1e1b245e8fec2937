import DepotEngine
import DepotWire
import Foundation
import Testing

/// Processors (DESIGN §17) through the store contract on both backends:
/// batches in identifier order handed out under leases, committed with
/// their changes in one save, a replayed or lapsed lease refused without a
/// change, progress, the end, a drop; the same text on each backend.
@Suite("Processor contract: leased batches committed exactly once on SQLite and PostgreSQL")
struct ProcessorContractTests {
    static func script(_ backend: any Backend) async throws -> [String] {
        try await ComputeContractTests.load(backend, count: 10)
        let store = backend.contract
        var out: [String] = []
        func attempt(_ name: String, _ body: () async throws -> String) async {
            do {
                out.append("\(name): " + (try await body()))
            } catch let error as DepotError {
                out.append(
                    "\(name): \(error.code) "
                        + error.message.replacingOccurrences(
                            of: #"lapsed at \S+;"#, with: "lapsed at …;", options: .regularExpression)
                )
            } catch {
                out.append("\(name): \(error)")
            }
        }
        func describe(_ p: ProcessorInfo) -> String {
            "\(p.name) total \(p.total) done \(p.done) batches \(p.batchesDone)/\(p.batches) leased \(p.leased) finished \(p.finished)"
        }
        func take(_ name: String, at now: Date = Date()) async throws -> LeasedBatch? {
            guard case .batch(let b) = try await store.nextBatch(name, at: now) else { return nil }
            return b
        }
        func commit(_ name: String, _ lease: String, note: String?) async throws -> String {
            var changes: [ChangeSet.Change] = []
            if let note {
                changes.append(
                    ChangeSet.Change(.update, entity: "Trip", identifier: ["t05"], set: ["note": .string(note)]))
            }
            var request = SaveRequest(ChangeSet(changes), author: "worker")
            request.processorLease = ProcessorLease(processor: name, lease: lease)
            let reply = try await store.saveAll([request])[0].get()
            // The progress the commit answers, read once in its save, is
            // what a read after it finds.
            #expect(reply.processor == (try await store.processor(name)), "\(backend.name)")
            return "token \(reply.result?.token == nil ? "none" : "new") changes \(reply.result?.changes.count ?? 0)"
        }
        // Trips 3 to 10 have more than 2 nights: 8 records, batches of 3.
        await attempt("create") {
            describe(
                try await store.createProcessor(
                    ProcessorSpec(name: "p", entity: "Trip", where: "nights > 2", batch: 3, lease: .seconds(3_600)))
            )
        }
        await attempt("create again") {
            describe(try await store.createProcessor(ProcessorSpec(name: "p", entity: "Trip")))
        }
        await attempt("a bad name") {
            describe(try await store.createProcessor(ProcessorSpec(name: "a b", entity: "Trip")))
        }
        await attempt("a bad predicate") {
            describe(try await store.createProcessor(ProcessorSpec(name: "q", entity: "Trip", where: "nope > 1")))
        }
        let leased = try await store.saveAll([SaveRequest.next(of: "p")])[0].get()
        guard case .batch(let first) = try #require(leased.next) else { throw CancellationError() }
        #expect(leased.processor == (try await store.processor("p")), "\(backend.name): the lease's processor")
        let second = try #require(try await take("p"))
        out.append(
            "leases \(first.lease.prefix(2)) \(second.lease.prefix(2)) ids \(first.identifiers) \(second.identifiers)")
        out.append(
            "records \(String(decoding: try await store.records(of: second, entity: "Trip"), as: UTF8.self))"
        )
        await attempt("commit the second with a change") { try await commit("p", second.lease, note: "seen") }
        await attempt("the same commit replayed") { try await commit("p", second.lease, note: "again") }
        await attempt("a lease never given") { try await commit("p", "7-abc", note: nil) }
        out.append("note \(try await backend.records("Trip")[4][5])")
        await attempt("progress") { describe(try await store.processor("p")) }
        // A lease that lapses (the clock given): the batch goes to the next
        // client; the late commit changes nothing.
        await attempt("short") {
            describe(
                try await store.createProcessor(
                    ProcessorSpec(name: "short", entity: "Trip", batch: 20, lease: .seconds(60))))
        }
        let t0 = Date()
        let later = t0 + 61
        let lapsing = try #require(try await take("short", at: t0))
        let lapsed = try await store.nextBatch("short", at: t0)
        out.append("all leased: \(lapsed == .leasedUntil(lapsing.expires))")
        let again = try #require(try await take("short", at: later))
        out.append("handed again: \(again.identifiers == lapsing.identifiers && again.lease != lapsing.lease)")
        await attempt("the lapsed lease") { try await commit("short", lapsing.lease, note: "late") }
        await attempt("the new lease, committed after it lapsed") {
            try await store.withSave(author: "worker", job: nil) { save in
                try await save.finishBatch(
                    ProcessorLease(processor: "short", lease: again.lease),
                    now: later + 61)
            }.value
            return "accepted"
        }
        await attempt("the new lease") { try await commit("short", again.lease, note: nil) }
        await attempt("short at its end") { "\(try await store.nextBatch("short"))" }
        // The rest of p, to its end.
        await attempt("the first") { try await commit("p", first.lease, note: nil) }
        while let b = try await take("p") { _ = try await commit("p", b.lease, note: nil) }
        await attempt("p at its end") { describe(try await store.processor("p")) }
        out.append("list \(try await store.reads.processors().map(\.name))")
        out.append("drop \(try await store.dropProcessor("p")) \(try await store.dropProcessor("p"))")
        await attempt("dropped") { describe(try await store.processor("p")) }
        await attempt("next of none") { "\(try await store.nextBatch("p"))" }
        return out
    }

    @Test("one script of processors gives the same batches, refusals and progress on each backend")
    func script() async throws {
        let answers = try await Backends.answers(entities: ComputeContractTests.trips(), Self.script)
        for (name, out) in answers {
            #expect(out[0] == "create: p total 8 done 0 batches 0/3 leased 0 finished false", "\(name): \(out)")
            #expect(out[1].hasPrefix("create again: conflict"), "\(name): \(out)")
            #expect(out[2].hasPrefix("a bad name: invalid_argument"), "\(name): \(out)")
            #expect(out[3].hasPrefix("a bad predicate: unknown_field"), "\(name): \(out)")
            #expect(
                out[4] == #"leases 0- 1- ids ["\"t03\"", "\"t04\"", "\"t05\""] ["\"t06\"", "\"t07\"", "\"t08\""]"#,
                "\(name): \(out)")
            #expect(out[5].hasPrefix(#"records [{"id":"t06""#), "\(name): \(out)")
            #expect(out[6] == "commit the second with a change: token new changes 1", "\(name): \(out)")
            #expect(
                out[7].hasPrefix("the same commit replayed: conflict batch 1 of processor \"p\" is committed already"),
                "\(name): \(out)")
            #expect(out[8].hasPrefix("a lease never given: conflict"), "\(name): \(out)")
            #expect(out[9] == #"note "seen""#, "\(name): \(out)")
            #expect(out[10] == "progress: p total 8 done 3 batches 1/3 leased 1 finished false", "\(name): \(out)")
            #expect(out[12] == "all leased: true", "\(name): \(out)")
            #expect(out[13] == "handed again: true", "\(name): \(out)")
            #expect(
                out[14].hasPrefix(
                    "the lapsed lease: conflict the lease of batch 0 of processor \"short\" lapsed and the batch was handed out again"
                ),
                "\(name): \(out)")
            #expect(
                out[15].hasPrefix(
                    "the new lease, committed after it lapsed: conflict the lease of batch 0 of processor \"short\" lapsed at"
                ),
                "\(name): \(out)")
            #expect(out[16] == "the new lease: token none changes 0", "\(name): \(out)")
            #expect(out[17] == "short at its end: finished", "\(name): \(out)")
            #expect(out[19] == "p at its end: p total 8 done 8 batches 3/3 leased 0 finished true", "\(name): \(out)")
            #expect(out[20] == #"list ["p", "short"]"#, "\(name): \(out)")
            #expect(out[21] == "drop true false", "\(name): \(out)")
            #expect(out[22].hasPrefix("dropped: unknown_processor"), "\(name): \(out)")
            #expect(out[23].hasPrefix("next of none: unknown_processor"), "\(name): \(out)")
        }
        for (name, out) in answers.dropFirst() {
            #expect(out == answers[0].1, "\(name) differs from \(answers[0].0)")
        }
    }

    /// Issue 51: `next` handed out every batch never leased before a lapsed
    /// one, against docs/api.md ("the first batch not committed whose
    /// lease, if any, lapsed").
    static func order(_ backend: any Backend) async throws -> [String] {
        try await ComputeContractTests.load(backend, count: 30)
        let store = backend.contract
        _ = try await store.createProcessor(ProcessorSpec(name: "o", entity: "Trip", batch: 10, lease: .seconds(60)))
        let t0 = Date()
        let later = t0 + 61
        var out: [String] = []
        for now in [t0, t0, later, later, later] {
            guard case .batch(let b) = try await store.nextBatch("o", at: now) else {
                out.append("none")
                continue
            }
            out.append("\(b.lease.split(separator: "-")[0]) \(b.identifiers.first.map { "\($0)" } ?? "")")
        }
        return out
    }

    @Test("next hands out the first batch, in order, that is open or whose lease lapsed")
    func lapsedBeforeLaterOpen() async throws {
        for (name, out) in try await Backends.answers(entities: ComputeContractTests.trips(), Self.order) {
            #expect(out.map { $0.split(separator: " ")[0] } == ["0", "1", "0", "1", "2"], "\(name): \(out)")
        }
    }
}

extension ProcessorContractTests {
    /// Issue 52: a lease is a request of the store's save queue, so leases
    /// asked while the writer is busy wait together and are handed out in
    /// the group that follows (one commit for all, where each lease took a
    /// synced transaction of its own before).
    static func leasesInAGroup(_ backend: any Backend) async throws -> [String] {
        try await ComputeContractTests.load(backend, count: 30)
        let store = backend.contract
        _ = try await store.createProcessor(ProcessorSpec(name: "g", entity: "Trip", batch: 3, lease: .seconds(60)))
        let queue = SaveQueue(store)
        // The writer held, so that the leases queue up behind it.
        let writer = await HeldWriter.hold(store)
        let first = Task { try await queue.save(SaveRequest.next(of: "g")) }
        while queue.load != (0, true) { await Task.yield() }
        let leases = (0..<9).map { _ in Task { try await queue.save(SaveRequest.next(of: "g")) } }
        // All nine wait together for the group after the first.
        while queue.load.waiting < 9 { await Task.yield() }
        try await writer.release()
        var seqs: [String] = []
        for reply in [try await first.value] + (try await leases.asyncMap { try await $0.value }) {
            guard case .batch(let b) = reply.next else {
                seqs.append("none")
                continue
            }
            seqs.append(String(b.lease.split(separator: "-")[0]))
        }
        let after = try await store.processor("g")
        return [
            "batches \(Set(seqs).count) of \(seqs.count)", "leased \(after.leased)",
            "next \(try await store.nextBatch("g"))"
        ]
    }

    @Test(
        "leases asked while the writer is busy wait in the save queue and are handed out together, each its own batch")
    func leasesShareAGroup() async throws {
        for (name, out) in try await Backends.answers(entities: ComputeContractTests.trips(), Self.leasesInAGroup) {
            #expect(out[0] == "batches 10 of 10", "\(name): \(out)")
            #expect(out[1] == "leased 10", "\(name): \(out)")
            #expect(out[2].hasPrefix("next leasedUntil"), "\(name): \(out)")
        }
    }
}

extension Array {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var out: [T] = []
        for element in self { out.append(try await transform(element)) }
        return out
    }
}
