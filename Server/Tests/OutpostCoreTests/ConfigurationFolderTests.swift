import Foundation
import Testing

@_spi(OutpostInternal) @testable import OutpostCore

@Suite("Configuration folder")
struct ConfigurationFolderTests {
    @Test("XDG: an absolute $XDG_CONFIG_HOME wins; a relative one is ignored for $HOME/.config")
    func xdg() {
        let absolute = ConfigurationFolder.xdgURL(
            application: "notes", environment: ["XDG_CONFIG_HOME": "/srv/config", "HOME": "/home/ada"])
        #expect(absolute.path == "/srv/config/notes")
        let relative = ConfigurationFolder.xdgURL(
            application: "notes", environment: ["XDG_CONFIG_HOME": "config", "HOME": "/home/ada"])
        #expect(relative.path == "/home/ada/.config/notes")
        let unset = ConfigurationFolder.xdgURL(application: "notes", environment: ["HOME": "/home/ada"])
        #expect(unset.path == "/home/ada/.config/notes")
        let noHome = ConfigurationFolder.xdgURL(application: "notes", environment: [:])
        #expect(noHome.path.hasSuffix("/.config/notes"))
        #expect(noHome.path.hasPrefix("/"))
    }

    #if os(Linux)
        @Test("on Linux the standard location is the XDG folder of the process's environment")
        func standardOnLinux() throws {
            let folder = try ConfigurationFolder.url(for: .standard, application: "outpost-test")
            let expected = ConfigurationFolder.xdgURL(
                application: "outpost-test", environment: ProcessInfo.processInfo.environment)
            #expect(folder == expected)
            #expect(
                Outbox.Configuration.defaultFileURL(application: "outpost-test") == expected.appending(path: "outbox.journal"))
        }

        @Test("an App Group is refused off Apple platforms with folderUnavailable")
        func appGroupOffApple() {
            #expect {
                _ = try ConfigurationFolder.url(for: .appGroup("group.com.example.notes"), application: "notes")
            } throws: { error in
                (error as? OutpostError)?.code == .folderUnavailable
            }
        }
    #endif

    @Test("a custom folder is used as it is, without an application subfolder")
    func custom() throws {
        let chosen = URL(fileURLWithPath: "/var/lib/notes/state", isDirectory: true)
        #expect(try ConfigurationFolder.url(for: .custom(chosen), application: "notes") == chosen)
        #expect(ConfigurationFolder.Location.custom(chosen) != .standard)
    }
}
