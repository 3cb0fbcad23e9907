/// Sluice's version: the one place it is written. `sluice --version` prints it; the
/// changelog, the git tags (`v` and this) and the Debian package take it from here.
///
/// Semantic versioning: before 1.0 a minor release may change the graph format, the Swift
/// API or the command line (the plugin C ABI has its own number, `SLUICE_ABI_VERSION`, which
/// changes only on a break).
public enum SluiceVersion {
    /// `MAJOR.MINOR.PATCH`.
    public static let string = "0.15.0"
}
