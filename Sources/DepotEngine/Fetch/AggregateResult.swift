import GRDB

/// The rows of an aggregate.
public struct AggregateResult: Sendable, Hashable {
    /// One row of an aggregate: the group's values and the functions' results.
    public struct Row: Sendable, Hashable {
        /// The values of the grouping fields, in request order.
        public var groups: [Value]
        /// The functions' results, in ``AggregateResult/functions`` order.
        public var values: [Value]

        /// Creates a row.
        public init(groups: [Value], values: [Value]) {
            self.groups = groups
            self.values = values
        }
    }

    /// The grouping fields.
    public var groupBy: [String]
    /// The functions computed.
    public var functions: [AggregateFunction]
    /// One row per group, ordered by the group's values; one row when ungrouped.
    public var rows: [Row]

    package init(groupBy: [String], functions: [AggregateFunction], rows: [Row]) {
        self.groupBy = groupBy
        self.functions = functions
        self.rows = rows
    }

    /// The result of `plan` over `rows`, each function's value checked to be
    /// one its type holds: a sum or average past the largest finite double
    /// (SQLite's infinity, PostgreSQL's overflow), or an integer sum past the
    /// 64-bit range (PostgreSQL's numeric), is `out_of_range`, never a value
    /// JSON cannot carry (issue 51: it answered `500`).
    package init(_ plan: AggregatePlan, groupBy: [String], rows: [Row]) throws {
        for row in rows {
            for (k, value) in row.values.enumerated() {
                let overflows =
                    switch (plan.types[k], value) {
                    case (.int, .double), (.int, .string): true
                    case (_, .double(let d)): !d.isFinite
                    default: false
                    }
                if overflows { throw Self.outOfRange(plan.functions[k]) }
            }
        }
        self.init(groupBy: groupBy, functions: plan.functions, rows: rows)
    }

    /// The error of a function whose result is out of range.
    package static func outOfRange(_ function: AggregateFunction) -> DepotError {
        DepotError(
            .outOfRange,
            function == .sum
                ? "a sum overflows (past ±1.8e308 for a double, ±9,223,372,036,854,775,807 for an int); "
                    + "narrow the records with where or group_by, or ask for avg"
                : "the \(function.rawValue) is beyond what a double holds (past ±1.8e308); "
                    + "narrow the records with where or group_by")
    }
}
