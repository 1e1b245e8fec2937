/// Values computed for each record (DESIGN §17): a computed update's
/// `compute`, a fetch's computed fields. Their expressions are compiled
/// with the predicate that selects the records, by one compiler, into one
/// list of bound values: the expressions' first, then the predicate's, the
/// order in which a query writes them (`SELECT <expressions> … WHERE
/// <predicate> …`; SQLite numbers its `?` in the text's order).
package struct ComputedColumns: Sendable {
    /// One computed value.
    package struct Column: Sendable {
        /// The field it sets (an update) or the key it is fetched under.
        package var name: String
        /// Its SQL, on the selected entity's row.
        package var sql: String
        /// The type of its values; nil when it is always null.
        package var type: FieldType?
    }

    /// The columns, in the order given.
    package var columns: [Column]
    /// The predicate; its arguments bind every column's values first.
    package var filter: SQLFragment
    /// How many of the filter's arguments are the columns'.
    package var columnArguments: Int
    /// What `now()` stood for, canonical UTC (a resumed job computes with the same).
    package var now: String
}

extension PredicateCompiler {
    /// Compiles `expressions` (each a name and its text) and `predicate` for
    /// records of `entity`. `now` is what `now()` stands for, the time of
    /// the call when nil.
    ///
    /// - Throws: ``DepotError`` (`invalidPredicate`, `unknownField`,
    ///   `typeMismatch`) whose message names the expression (`compute
    ///   "budget": …`) and whose position is in that expression's text.
    package static func compute(
        _ expressions: [(name: String, text: String)], where predicate: String?, entity: EntitySchema,
        schema: StoreSchema?, arguments: [String: Value] = [:], dialect: any SQLDialect = .sqlite,
        now: String? = nil, label: String = "compute"
    ) throws -> ComputedColumns {
        var compiler = PredicateCompiler(entity: entity, schema: schema, variables: arguments, dialect: dialect)
        if let now { compiler.now = now }
        var columns: [ComputedColumns.Column] = []
        for (name, text) in expressions {
            do {
                let operand = try PredicateParser.parseExpression(text)
                let c = try compiler.computed(operand, nesting: 0)
                columns.append(ComputedColumns.Column(name: name, sql: c.sql, type: c.type))
            } catch var error as DepotError {
                error.message = "\(label) \(JSONText.quoted(name)): " + error.message
                throw error
            }
        }
        let columnArguments = compiler.arguments.count
        var filter = SQLFragment(sql: dialect.trueLiteral, arguments: [])
        if let predicate, !predicate.trimmingWhitespace().isEmpty {
            let sql = try compiler.compile(try PredicateParser.parse(predicate), negated: false, nesting: 0)
            filter.sql = sql
        }
        filter.arguments = compiler.arguments
        filter.related = compiler.related
        return ComputedColumns(columns: columns, filter: filter, columnArguments: columnArguments, now: compiler.now)
    }
}
