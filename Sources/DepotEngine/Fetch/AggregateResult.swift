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
}
