"""The test suite; its folders mirror the package (docs/development.md#tests)."""
