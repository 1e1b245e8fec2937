import Foundation

/// Reads the input chunk by chunk on a thread of its own, ahead of the saves.
final class ParserThread: @unchecked Sendable {
    // Safe: `batcher` is used only by the thread, after `start()`.
    private var batcher: any RecordBatcher
    private let queue: ChunkQueue
    private let chunk: Int

    init(batcher: any RecordBatcher, queue: ChunkQueue, chunk: Int) {
        self.batcher = batcher
        self.queue = queue
        self.chunk = chunk
    }

    func start() {
        let thread = Thread { [self] in
            while true {
                let item: Result<ParsedBatch, any Error>
                do {
                    item = .success(try batcher.next(max: chunk))
                } catch {
                    item = .failure(error)
                }
                guard queue.put(item) else { return }
                if case .success(let parsed) = item, !parsed.atEnd { continue }
                return
            }
        }
        thread.name = "depot-import-parser"
        thread.start()
    }
}
