import DepotEngine
import Foundation
import Testing

@testable import DepotPostgres

/// The daemon's jobs, imported files and checkpoints, whose SQL is written
/// once (`Store/StoreBackend+Jobs.swift`, issue 52): the same answers on
/// both backends, but where several hosts share a PostgreSQL store's jobs
/// (a state that does not end a job is its claim's to keep; a cancel is
/// asked of the running host).
@Suite("Jobs table contract: the daemon's jobs on SQLite and PostgreSQL")
struct JobTableContractTests {
    static func script(_ backend: any Backend) async throws -> [String] {
        let store = backend.contract
        var out: [String] = []
        func record(_ id: String, _ state: String) -> [UInt8] {
            Array(#"{"id":"\#(id)","state":"\#(state)","note":"l'été ☀︎"}"#.utf8)
        }
        func show() async throws {
            let all = try await store.jobs()
            out.append(
                "jobs: "
                    + all.map {
                        "\($0.id) \(String(decoding: $0.record, as: UTF8.self).contains("\"note\":\"l'été ☀︎\""))"
                    }
                    .joined(separator: ", "))
        }
        out.append("hosts: \(store.jobHosting != nil)")
        try await store.putJob(id: "j2", state: "queued", record: record("j2", "queued"))
        try await store.putJob(id: "j1", state: "queued", record: record("j1", "queued"))
        try await store.putJob(id: "j2", state: "running", record: record("j2", "running"))
        try await show()
        out.append("j2: " + (try await store.job("j2")).map { String(decoding: $0, as: UTF8.self) }!)
        out.append("none: \(try await store.job("nope") == nil)")
        out.append("claimable: " + (try await store.claimableJobs()).map(\.id).joined(separator: ", "))
        out.append("cancel j2: \(try await store.requestCancel("j2"))")
        try await store.putJob(id: "j2", state: "succeeded", record: record("j2", "succeeded"))
        out.append("cancel ended j2: \(try await store.requestCancel("j2"))")
        // An ended job's record is final where hosts share it; this host's own table takes the write.
        try await store.putJob(id: "j2", state: "failed", record: record("j2", "failed"))
        out.append("j2 after: " + String(decoding: try await store.job("j2")!, as: UTF8.self))
        let refused = await #expect(throws: DepotError.self) {
            try await store.putJob(id: "j3", state: "queued", record: [0xC3, 0x28])
        }
        out.append("not UTF-8: \(refused.map { "\($0.code)" } ?? "-")")
        out.append("file: \(try await store.importedFile(hash: "h1") ?? "none")")
        try await store.recordImportedFile(hash: "h1", path: "/in/a.csv", job: "j1")
        try await store.recordImportedFile(hash: "h1", path: "/in/b.csv", job: "j9")
        out.append("file: \(try await store.importedFile(hash: "h1") ?? "none")")
        out.append("checkpoint: \(try await store.checkpoint(job: "j1") == nil)")
        return out
    }

    @Test("jobs keep their order and records; imported files keep the first job; hosts share claims and cancels")
    func script() async throws {
        let answers = try await Backends.answers(entities: BatchContractTests.shop(), Self.script)
        func record(_ id: String, _ state: String) -> String {
            #"{"id":"\#(id)","state":"\#(state)","note":"l'été ☀︎"}"#
        }
        for (name, out) in answers {
            let shared = name == "postgresql"
            #expect(
                out == [
                    "hosts: \(shared)",
                    "jobs: j2 true, j1 true",
                    "j2: " + record("j2", "running"),
                    "none: true",
                    // j2 is queued in the table while no host claimed it: the state is the claim's.
                    "claimable: " + (shared ? "j2, j1" : ""),
                    "cancel j2: \(shared)",
                    "cancel ended j2: false",
                    "j2 after: " + record("j2", shared ? "succeeded" : "failed"),
                    "not UTF-8: invalid_argument",
                    "file: none",
                    "file: j1",
                    "checkpoint: true"
                ], "\(name)")
        }
    }
}
