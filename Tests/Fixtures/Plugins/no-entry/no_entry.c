// Test-only shared library: a real ELF shared object that exports a function, but not the
// plugin entry. The host must report the missing symbol.
__attribute__((visibility("default"))) int sluice_test_not_a_plugin(int value) {
    return value + 1;
}
