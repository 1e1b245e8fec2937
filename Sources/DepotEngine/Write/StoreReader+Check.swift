extension StoreReader {
    /// Checks a batch update without running it: its entity, its predicate
    /// and the values of `set`, each converted to its field's type.
    ///
    /// For example:
    ///
    /// ```swift
    /// try store.reader.checkUpdate(entity: "Trip", where: "destination == \"Rome\"", set: ["budget": .string("a lot")])
    /// // throws typeMismatch: field "budget" is double
    /// ```
    ///
    /// - Throws: the ``DepotError`` that ``Store/update(entity:where:arguments:set:author:job:batchSize:progress:)``
    ///   would throw before writing anything.
    public func checkUpdate(entity name: String, where predicate: String?, arguments: [String: Value] = [:],
                            set values: [String: Value]) throws {
        let entity = try entity(name)
        _ = try PredicateCompiler.compile(predicate, entity: entity, schema: schema, arguments: arguments)
        _ = try Store.assignments(values, in: entity)
    }

    /// Checks a duplicate resolution without running it: its entity, fields and predicate.
    ///
    /// - Throws: the ``DepotError`` that ``Store/resolveDuplicates(entity:by:keep:where:arguments:author:job:batchSize:progress:)``
    ///   would throw before writing anything.
    public func checkDuplicates(entity name: String, by fields: [String], where predicate: String?,
                                arguments: [String: Value] = [:]) throws {
        _ = try DuplicateQuery(entity: entity(name), schema: schema, by: fields, predicate: predicate, arguments: arguments)
    }
}
