// @kassa/cli is filled by issue 5 (merchant SDK and the `kassa` command); it exports nothing yet.
export {}
