import Foundation

/// Sets environment variables for a test's duration (provider keys come from the environment).
/// One such test runs at a time: the cases of a parameterized test share variable names, and
/// one case's unset must not land while another is reading its key.
public func withEnvironment<T>(_ values: [String: String], _ body: () throws -> T) rethrows -> T {
    environmentLock.lock()
    defer { environmentLock.unlock() }
    for (name, value) in values { setenv(name, value, 1) }
    defer { for name in values.keys { unsetenv(name) } }
    return try body()
}

private let environmentLock = NSLock()
