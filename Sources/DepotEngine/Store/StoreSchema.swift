/// A store's name and its entities, looked up by name.
package struct StoreSchema: Sendable {
    let name: String
    let entities: [EntitySchema]
    private let byName: [String: EntitySchema]
    /// See ``StoreConfiguration/changesPerStatement``.
    let changesPerStatement: Int

    package init(name: String, entities: [EntitySchema], changesPerStatement: Int = 64) {
        self.name = name
        self.entities = entities
        self.changesPerStatement = max(1, min(changesPerStatement, 3_000))
        self.byName = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// The entity called `name`.
    ///
    /// - Throws: ``DepotError/Code/unknownEntity`` with the closest name as a hint.
    func entity(_ name: String) throws -> EntitySchema {
        guard let e = byName[name] else {
            throw DepotError(
                .unknownEntity,
                "store \(JSONText.quoted(self.name)) has no entity "
                    + "\(JSONText.quoted(name))" + DepotError.suggestion(for: name, in: entities.map(\.name)))
        }
        return e
    }
}
