"""Dataset catalog: manifests with sha256 and VAD anchors, integrity-checked loading, sampling."""
