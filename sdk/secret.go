package sdk

// Secret returns the value of the secret name, one of the manifest's
// [capabilities] secrets that the call was granted (ABI: handle with
// KindSecret, then secret_get). ErrDenied when it is not granted,
// ErrNotFound when the operator has not set it. The value never appears in
// the host's logs or attestations; keep it out of the skill's logs and
// output too.
func (c *Ctx) Secret(name string) (string, error) {
	h, err := c.handle(kindSecret, name)
	if err != nil {
		return "", err
	}
	b, err := result("secret_get", name, hostSecretGet(h))
	return string(b), err
}
