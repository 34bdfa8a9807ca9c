import Foundation
import OutpostCallbacks

/// The x-callback-url step of `outpost demo`: route, answer, and call another app.
enum CallbacksTour {
    static func run(log: TourLog) async throws {
        log.section("x-callback-url: route a URL, answer the caller, call another app")

        // A recording opener stands in for the operating system, so nothing is launched.
        let opener = RecordingURLOpener()
        let router = CallbackRouter(opener: opener)
        router.register(scheme: "outpost-demo", action: "translate") { _ in }

        let incoming =
            "outpost-demo://x-callback-url/translate?x-source=Notes"
            + "&x-success=notes%3A%2F%2Fx-callback-url%2Fdone%3Fdoc%3D7%23top"
            + "&x-error=notes%3A%2F%2Fx-callback-url%2Ffailed&text=good%20morning&to=fr"
        log.step("Route a URL sent by another app")
        log.detail(incoming)
        let callback = try router.route(incoming)
        log.detail(
            """
            action: \(callback.action)   source: \(callback.source ?? "-")
            parameters: \(callback.parameters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
            x-success: \(callback.successURL ?? "-")
            """)

        log.step("Answer success with translation=bonjour (à tous)")
        let opened = await callback.succeed(additionalParameters: [("translation", "bonjour (à tous)")])
        log.detail("opened: \(opened) → \(opener.urls.last?.absoluteString ?? "nothing")")

        log.step("Call another app and await its answer")
        let caller = try await CallbackCaller.opening(
            configuration: .init(scheme: "outpost-demo", source: "Outpost Demo", timeout: .seconds(10)),
            router: router)
        async let answer = caller.call(scheme: "shouty", action: "uppercase", parameters: [("text", "hello")])

        // The simulated other app: it reads the request that was opened and answers through
        // its x-success, which comes back to us as a URL routed through the same router.
        let urls = await opener.waitForURLs(count: 2)
        let request = try Callback(parsing: urls[1].absoluteString, opener: opener)
        log.detail("opened: \(request.url)")
        let text = request.parameters["text"] ?? ""
        guard let reply = request.url(for: .success(parameters: [("text", text.uppercased())])) else {
            log.detail("the request carried no x-success")
            return
        }
        log.step("The other app answers; route its reply")
        log.detail(reply)
        try router.route(reply)
        let result = try await answer
        log.detail("call returned: \(result.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))")
    }
}
