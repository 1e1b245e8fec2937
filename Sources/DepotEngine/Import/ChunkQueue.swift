import Foundation

/// A short blocking queue of parsed chunks between the parser thread and the
/// save, which runs on the store's writer thread (never on the cooperative
/// pool, so blocking there starves no task).
// @unchecked: every field is read and written under `condition` (a blocking queue, off the task pool).
final class ChunkQueue: @unchecked Sendable {
    // Safe: every field is read and written under `condition`.
    private let condition = NSCondition()
    private var items: [Result<ParsedBatch, any Error>] = []
    private var closed = false
    private let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    /// Adds a chunk, waiting while the queue is full; false once closed.
    func put(_ item: Result<ParsedBatch, any Error>) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while items.count >= capacity && !closed { condition.wait() }
        if closed { return false }
        items.append(item)
        condition.broadcast()
        return true
    }

    /// Whether a chunk put now would not wait (the only producer can rely on it).
    var hasRoom: Bool {
        condition.lock()
        defer { condition.unlock() }
        return items.count < capacity || closed
    }

    /// The next chunk, waiting for it; nil once closed.
    func take() -> Result<ParsedBatch, any Error>? {
        condition.lock()
        defer { condition.unlock() }
        while items.isEmpty && !closed { condition.wait() }
        if items.isEmpty { return nil }
        let item = items.removeFirst()
        condition.broadcast()
        return item
    }

    /// Wakes and stops both sides.
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }
}
