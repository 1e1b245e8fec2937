/// A page of history cut to at most `maxChanges` changes (issue #35: one
/// import's save is one transaction, so a page of ten transactions answered
/// 170 MB). Both backends read the heads of the page's transactions, then
/// hand their changes here in order and stop reading once ``add(_:to:)``
/// says the page is full. A transaction cut by the page ends it, with a
/// token inside it (`T.K`) and ``HistoryTransaction/continues``; a page
/// read after such a token starts where it stopped.
package struct HistoryPage {
    private var transactions: [HistoryTransaction]
    private var positions: [Int64: Int] = [:]
    /// Changes of the first transaction read before (a token `T.K`), and
    /// those still to skip when the backend could not leave them out.
    private let resumed: (id: Int64, read: Int)?
    private var skip: Int
    private let maxChanges: Int
    private var taken = 0
    /// The index of the last transaction a change went to.
    private var last: Int?
    /// Where the change that did not fit belongs, once the page is full.
    private var overflow: Int?

    /// - Parameters:
    ///   - heads: the page's transactions in order, without changes.
    ///   - token: the token read after; a place inside a transaction resumes it.
    ///   - skip: changes of that transaction the backend still hands over
    ///     though they were read before.
    package init(heads: [HistoryTransaction], after token: HistoryToken?, skip: Int = 0, maxChanges: Int) {
        transactions = heads
        for (i, t) in heads.enumerated() { positions[t.token.id] = i }
        if let token, !token.isWhole { resumed = (token.id, token.change) } else { resumed = nil }
        self.skip = resumed == nil ? 0 : skip
        self.maxChanges = max(1, maxChanges)
    }

    /// Adds the next change, of transaction `id`; `false` once the page is
    /// full (this change did not fit): stop reading.
    package mutating func add(_ change: HistoryChange, to id: Int64) -> Bool {
        guard let p = positions[id] else { return true }
        if skip > 0, id == resumed?.id {
            skip -= 1
            return true
        }
        guard taken < maxChanges else {
            overflow = p
            return false
        }
        transactions[p].changes.append(change)
        taken += 1
        last = p
        return true
    }

    /// The page: every transaction read whole, and the one the page cut,
    /// with its token inside it.
    package var result: [HistoryTransaction] {
        guard let overflow else { return transactions }
        guard let last else { return [] }
        var page = Array(transactions[...last])
        if overflow == last {
            let t = page[last]
            let before = t.token.id == resumed?.id ? resumed!.read : 0
            page[last].token = HistoryToken(t.token.id, change: before + t.changes.count)
            page[last].continues = true
        }
        return page
    }
}
