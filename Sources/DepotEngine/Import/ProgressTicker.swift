import Foundation
import Synchronization

/// Sends the latest progress again, with its elapsed time brought up to
/// date, when a second passes without a save: a long save (a big page cache
/// being written out) must not leave a progress bar silent.
final class ProgressTicker: Sendable {
    private struct State {
        var progress = ImportProgress()
        var lastEmit: ContinuousClock.Instant
    }
    private let state: Mutex<State>
    private let started: ContinuousClock.Instant
    private let emit: (@Sendable (ImportProgress) -> Void)?

    init(started: ContinuousClock.Instant, emit: (@Sendable (ImportProgress) -> Void)?) {
        self.started = started
        self.emit = emit
        state = Mutex(State(lastEmit: started))
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    /// Records progress that was just sent.
    func update(_ progress: ImportProgress) {
        state.withLock {
            $0.progress = progress
            $0.lastEmit = .now
        }
    }

    func run() async {
        guard let emit else { return }
        while !Task.isCancelled {
            do { try await Task.sleep(for: .milliseconds(250)) } catch { return }
            let now = ContinuousClock.now
            let due: ImportProgress? = state.withLock {
                guard now - $0.lastEmit >= .milliseconds(900) else { return nil }
                $0.lastEmit = now
                var p = $0.progress
                p.elapsed = Self.seconds(now - started)
                return p
            }
            if let due, !Task.isCancelled { emit(due) }
        }
    }
}
