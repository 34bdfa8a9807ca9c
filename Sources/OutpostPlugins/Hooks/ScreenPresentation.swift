import Synchronization

/// One showing of a screen: remembers which hooks ran for it, so that hooks that are not
/// ``ScreenHook/isRecurring`` run once per stage, and recurring ones learn their
/// ``ScreenHookContext/presentationIndex``.
///
/// Create one when a screen instance is created and pass it to every
/// ``ScreenHookChain/run(_:data:presentation:)`` for that instance.
public final class ScreenPresentation: Sendable {
    /// The screen shown.
    public let screen: String
    private let runs = Mutex<[String: Int]>([:])

    /// Creates a presentation of `screen`.
    public init(screen: String) {
        self.screen = screen
    }

    /// How many times `hook` ran (to the end, whatever its decision) at `stage` for this presentation.
    public func runCount(hook: String, stage: ScreenHookStage) -> Int {
        runs.withLock { $0[Self.key(hook, stage), default: 0] }
    }

    func recordRun(hook: String, stage: ScreenHookStage) {
        runs.withLock { $0[Self.key(hook, stage), default: 0] += 1 }
    }

    private static func key(_ hook: String, _ stage: ScreenHookStage) -> String { stage.rawValue + "/" + hook }
}
