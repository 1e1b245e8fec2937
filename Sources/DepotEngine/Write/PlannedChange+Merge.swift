// Optimistic concurrency (DESIGN §16): a change read at a token, whose
// record another save changed since, is merged with that save per field,
// from the history, under the set's merge policy.
extension PlannedChange {
    /// The fields this change sets, in the entity's order: an update's or an
    /// upsert's given fields, a replacement's or a delete's every field
    /// (the identifier's aside).
    private var mine: [String] {
        let fields = entity.fields.map(\.name).filter { !entity.identifier.contains($0) }
        switch kind {
        case .update, .upsert: return fields.filter { values[$0] != nil }
        case .replace, .delete, .insert: return fields
        }
    }

    /// Merges the change, read at ``ifToken``, with the saves that changed
    /// its record since (`stored` is the record now, nil when there is
    /// none): nil when it may be applied (its values adjusted, or
    /// ``skip`` set), else why not.
    mutating func merge(with stored: RecordVersion?, policy: ChangeSet.MergePolicy, in save: some WriteContext)
        async throws -> SaveRefusal.Failure?
    {
        guard let token = ifToken else { return nil }
        let history = try await save.history(
            of: entity, identifier: identifier, after: token.id, through: stored?.token.id ?? .max)
        guard token.id <= history.lastIssued else {
            return .init(
                index: index, code: .invalidValue, field: nil,
                message: "if_token \(token) was never issued (the last token is \(history.lastIssued))")
        }
        if let stored, stored.token.id <= token.id { return nil }  // nobody changed it since
        let others = entity.fields.map(\.name).filter { !entity.identifier.contains($0) }
        // The fields the other saves changed, and their values at the token where the history keeps them.
        var theirs: [String] = []
        var base: [String: Value] = [:]
        if token.id < history.prunedThrough {
            theirs = others  // the history since the token is gone: every field may have changed
        } else {
            for change in history.changes {
                let old = change.old.flatMap { MiniJSON.parse($0) }
                var oldValues: [String: Value] = [:]
                if case .object(let pairs)? = old { for (k, v) in pairs { oldValues[k] = v } }
                for name in change.kind == .update ? change.fields ?? others : others where !theirs.contains(name) {
                    theirs.append(name)
                    if change.kind != .insert, let value = oldValues[name], let field = try? entity.field(named: name),
                        let converted = try? ValueConversion.convert(value, to: field)
                    {
                        base[name] = converted
                    }
                }
            }
        }
        guard !theirs.isEmpty else { return nil }
        let now: [String: Value] =
            stored.map { Dictionary(uniqueKeysWithValues: zip(entity.fields.map(\.name), $0.values)) } ?? [:]
        let mine = self.mine
        let both = entity.fields.map(\.name).filter { theirs.contains($0) && mine.contains($0) }
        func conflicts(_ names: [String]) -> [FieldConflict] {
            names.map { name in
                FieldConflict(
                    field: name, base: base[name], stored: now[name] ?? .null,
                    yours: kind == .delete ? .null : values[name] ?? .null)
            }
        }
        let gone = stored == nil ? ", which deleted it" : ""
        switch policy {
        case .error:
            guard !both.isEmpty else { return nil }
            return .init(
                index: index, code: .conflict, field: both.count == 1 ? both[0] : nil,
                message: "\(describe) was changed since token \(token) by another save\(gone), in "
                    + both.map { JSONText.quoted($0) }.joined(separator: ", ")
                    + "; read it again, or save with another merge policy",
                conflicts: conflicts(both))
        case .objectTrump:
            return nil
        case .storeTrump:
            if kind == .delete || stored == nil {
                skip = true  // the stored record (or its absence) stays
                return nil
            }
            for name in both {
                if kind == .update { values[name] = nil } else { values[name] = now[name] ?? .null }
            }
            if kind == .update, values.isEmpty { skip = true }
            return nil
        case .overwrite:
            guard kind == .update || kind == .upsert, stored != nil else { return nil }
            let putBack = theirs.filter { !mine.contains($0) }
            let unknown = putBack.filter { base[$0] == nil }
            guard unknown.isEmpty else {
                return .init(
                    index: index, code: .conflict, field: nil,
                    message: "merge \"overwrite\" puts back the fields another save changed in \(describe) since "
                        + "token \(token), but the history does not keep their values then: "
                        + unknown.map { JSONText.quoted($0) }.joined(separator: ", ")
                        + " (history = \"values\" keeps them)",
                    conflicts: conflicts(unknown))
            }
            for name in putBack { values[name] = base[name] }
            return nil
        }
    }
}
