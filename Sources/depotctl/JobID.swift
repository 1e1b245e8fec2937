import ArgumentParser
import Foundation

/// The job a command is about.
struct JobID: ParsableArguments {
    @Argument(help: ArgumentHelp("The job's id, as depotctl jobs shows it.", valueName: "id"))
    var id: String
}
