import AuthenticationServices
import SwiftUI

#if os(macOS)
    import AppKit
#else
    import UIKit
#endif

/// The first screen: one button that signs in with the system's web authentication session.
struct SignInView: View {
    @Environment(NotesSession.self) private var session
    @State private var signingIn = false

    var body: some View {
        VStack(spacing: 24) {
            Text("Notes").font(.largeTitle.bold())
            Text("Your notes, on this device and all the others.")
                .foregroundStyle(.secondary)
            Button {
                signingIn = true
                Task {
                    await session.signIn(anchor: Self.keyWindow)
                    signingIn = false
                }
            } label: {
                if signingIn { ProgressView() } else { Text("Sign In") }
            }
            .buttonStyle(.borderedProminent)
            .disabled(signingIn)
            if let message = session.signInError {
                Text(message).font(.footnote).foregroundStyle(.red)
            }
        }
        .padding()
    }

    /// The window the sign-in sheet is shown over: the key window of the foreground scene.
    @MainActor
    static func keyWindow() -> ASPresentationAnchor {
        #if os(macOS)
            return NSApplication.shared.keyWindow ?? NSApplication.shared.windows.first ?? NSWindow()
        #else
            let scenes = UIApplication.shared.connectedScenes.compactMap { $0 as? UIWindowScene }
            let active = scenes.first { $0.activationState == .foregroundActive } ?? scenes.first
            return active?.keyWindow ?? active?.windows.first ?? UIWindow()
        #endif
    }
}
