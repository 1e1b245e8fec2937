// DepotFuzz: the six fuzz targets in one executable, run by name
// (`DepotFuzz FuzzCSV …`, see Fuzz/Support/FuzzSupport.swift and
// Fuzz/README.md), so that scripts/fuzz builds and links them once.
import FuzzSupport

#if DEBUG || FUZZING
import FuzzAPIBody
import FuzzCSV
import FuzzConfig
import FuzzInfer
import FuzzJSON
import FuzzPredicate

Fuzz.main(targets: [
    "FuzzPredicate": (FuzzPredicateEntry.body, FuzzPredicateEntry.seeds),
    "FuzzCSV": (FuzzCSVEntry.body, FuzzCSVEntry.seeds),
    "FuzzJSON": (FuzzJSONEntry.body, FuzzJSONEntry.seeds),
    "FuzzConfig": (FuzzConfigEntry.body, FuzzConfigEntry.seeds),
    "FuzzAPIBody": (FuzzAPIBodyEntry.body, FuzzAPIBodyEntry.seeds),
    "FuzzInfer": (FuzzInferEntry.body, FuzzInferEntry.seeds)
])
#else
// A plain release build compiles the targets empty.
Fuzz.main(targets: [:])
#endif
