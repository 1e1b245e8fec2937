import DepotWire
import Foundation
import NIOHTTP1

/// A batch a processor handed out (DESIGN §17): its records, and the lease
/// to commit them with. Commit it before the lease lapses: a lapsed or
/// replayed commit changes nothing and throws a `conflict`.
///
/// ```swift
/// for try await batch in client.process(store: "travel", processor: "geocode") {
///     try await batch.commit(batch.records.map { SaveChange(.update, entity: "Trip", identifier: $0["id"]!, set: ["lat": 48.8]) })
/// }
/// ```
public struct ProcessorBatch: Sendable {
    /// The batch's records, in identifier order.
    public var records: [Record]
    /// The lease.
    public var lease: String
    /// When the lease lapses.
    public var expires: String
    let client: DepotClient
    let store: String
    let processor: String

    /// Applies `changes` (a save's) and moves the processor past this batch, in one transaction.
    ///
    /// - Throws: ``DepotClientError`` `conflict` when the lease lapsed or the batch was committed already.
    @discardableResult
    public func commit(_ changes: [SaveChange] = [], author: String? = nil) async throws -> ProcessorCommitAnswer {
        try await client.commit(store: store, processor: processor, lease: lease, changes: changes, author: author)
    }
}

extension DepotClient {
    /// Creates a processor over the records that match now.
    ///
    /// ```swift
    /// try await client.createProcessor(store: "travel", ProcessorBody(name: "geocode", entity: "Trip", where: "lat == nil"))
    /// ```
    @discardableResult
    public func createProcessor(store: String, _ body: ProcessorBody) async throws -> ProcessorState {
        try await json(ProcessorState.self, .POST, "/v1/stores/\(Self.escaped(store))/processors", body: body)
    }

    /// The store's processors with their progress.
    ///
    /// ```swift
    /// for p in try await client.processors(store: "travel") { print(p.name, p.done, "/", p.total) }
    /// ```
    public func processors(store: String) async throws -> [ProcessorState] {
        try await json(ProcessorList.self, .GET, "/v1/stores/\(Self.escaped(store))/processors").processors
    }

    /// Drops a processor.
    ///
    /// ```swift
    /// try await client.dropProcessor("geocode", store: "travel")
    /// ```
    public func dropProcessor(_ name: String, store: String) async throws {
        _ = try await call(.DELETE, "/v1/stores/\(Self.escaped(store))/processors/\(Self.escaped(name))")
    }

    /// The processor's next batch, under a lease; nil once every batch is
    /// committed. While every batch left is leased, it waits for one.
    ///
    /// ```swift
    /// if let batch = try await client.nextBatch(store: "travel", processor: "geocode") { try await batch.commit() }
    /// ```
    public func nextBatch(store: String, processor: String) async throws -> ProcessorBatch? {
        var status = 0
        var bytes: [UInt8] = []
        // The daemon waits a while for a leased batch to lapse, then answers
        // 409 with Retry-After: asked again until a batch or the end.
        while true {
            do {
                bytes = try await call(
                    .POST, "/v1/stores/\(Self.escaped(store))/processors/\(Self.escaped(processor))/next",
                    body: .json(EmptyBody())
                ) { head in status = Int(head.status.code) }
                break
            } catch let error as DepotClientError where error.code == .conflict && error.status == 409 {
                try Task.checkCancellation()
                continue
            }
        }
        if status == 204 { return nil }
        let answer = try Self.decode(
            ProcessorBatchAnswer.self, bytes, answering: "POST .../processors/\(processor)/next")
        return ProcessorBatch(
            records: answer.records.map { Record($0.object ?? [:]) }, lease: answer.lease, expires: answer.expires,
            client: self, store: store, processor: processor)
    }

    /// Commits a batch's changes with its lease (``ProcessorBatch/commit(_:author:)``).
    @discardableResult
    public func commit(
        store: String, processor: String, lease: String, changes: [SaveChange] = [], author: String? = nil
    ) async throws -> ProcessorCommitAnswer {
        try await json(
            ProcessorCommitAnswer.self, .POST,
            "/v1/stores/\(Self.escaped(store))/processors/\(Self.escaped(processor))/commit",
            body: ProcessorCommitBody(lease: lease, changes: changes, author: author))
    }

    /// The processor's batches as they are handed out, until every one is
    /// committed: `enumerate(batchSize:)` across processes. The next batch
    /// is asked for when the loop asks for it (so a lease is not taken before
    /// its batch is wanted). Several clients may share one processor; each
    /// gets batches of its own.
    ///
    /// ```swift
    /// for try await batch in client.process(store: "travel", processor: "geocode") { try await batch.commit() }
    /// ```
    public func process(store: String, processor: String) -> ProcessorBatches {
        ProcessorBatches(client: self, store: store, processor: processor)
    }
}

/// A processor's batches (``DepotClient/process(store:processor:)``).
public struct ProcessorBatches: AsyncSequence, Sendable {
    public typealias Element = ProcessorBatch
    let client: DepotClient
    let store: String
    let processor: String

    /// Asks the daemon for each batch in turn.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let batches: ProcessorBatches

        /// The next batch, under a new lease; nil once all are committed.
        public mutating func next() async throws -> ProcessorBatch? {
            try await batches.client.nextBatch(store: batches.store, processor: batches.processor)
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(batches: self) }
}

/// An empty JSON object.
struct EmptyBody: Encodable {}
