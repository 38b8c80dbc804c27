import Foundation

/// The package's root (this file is Tests/TestSupport/Repository.swift): the shipped files under share/ are read
/// from the source tree.
public let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path
