/// Prints the steps of `outpost demo` in one consistent shape.
///
/// Every tour (foundation, records, callbacks, ...) writes through this type so that the
/// demo reads as one story: a section heading, numbered-free steps, and indented details.
struct TourLog: Sendable {
    /// Starts a new part of the tour.
    func section(_ title: String) {
        print("\n== \(title)")
    }

    /// One thing the tour does.
    func step(_ text: String) {
        print("  → \(text)")
    }

    /// What came back, indented under its step. Multi-line text keeps its indentation.
    func detail(_ text: String) {
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            print("      \(line)")
        }
    }
}
