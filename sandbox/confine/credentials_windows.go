package confine

// osCredentialStores are where Windows builds of the usual tools keep
// credentials (under the home directory), beyond CredentialStores'
// common ones: gcloud and GnuPG in the roaming application data, curl's
// and git's _netrc.
var osCredentialStores = []string{`AppData\Roaming\gcloud`, `AppData\Roaming\gnupg`, "_netrc"}
