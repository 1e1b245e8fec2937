/// One import: which file goes into which entity of a store, as which job.
public struct ImportRequest: Sendable, Hashable {
    /// The job's id; its checkpoint is kept under it.
    public var job: String
    /// The entity the records belong to.
    public var entity: String
    /// The input file.
    public var path: String
    /// Where rejected records are written, one JSON object per line.
    public var rejectsPath: String
    /// Who the history names as the author.
    public var author: String
    /// How to read and write.
    public var options: ImportOptions

    /// Creates a request.
    public init(
        job: String, entity: String, path: String, rejectsPath: String, author: String = "import",
        options: ImportOptions = ImportOptions()
    ) {
        self.job = job
        self.entity = entity
        self.path = path
        self.rejectsPath = rejectsPath
        self.author = author
        self.options = options
    }
}
