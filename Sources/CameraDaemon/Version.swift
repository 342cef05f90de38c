/// camerad's version, reported in Hello and by `--version`.
public let cameradVersion = "0.1.0"
