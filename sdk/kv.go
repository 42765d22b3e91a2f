package sdk

import "encoding/json"

// A KV is the skill's key-value store: one namespace per skill, kept by
// the broker across calls, granted when the manifest says storage = true.
// Keys are UTF-8 strings. Values and the store's total size have quotas
// (ErrQuota).
type KV struct{ ctx *Ctx }

// KV returns the skill's store. Nothing is asked of the host until a
// method is called; each method returns ErrDenied when storage is not
// granted.
func (c *Ctx) KV() KV { return KV{c} }

func (kv KV) handle() (int64, error) { return kv.ctx.handle(kindKV, "") }

// Get returns the value of key (ABI: kv_get), ErrNotFound when there is
// none.
func (kv KV) Get(key string) ([]byte, error) {
	h, err := kv.handle()
	if err != nil {
		return nil, err
	}
	return result("kv_get", key, hostKVGet(h, key))
}

// Put sets key to value (ABI: kv_put).
func (kv KV) Put(key string, value []byte) error {
	h, err := kv.handle()
	if err != nil {
		return err
	}
	return done("kv_put", key, hostKVPut(h, key, value))
}

// Delete removes key (ABI: kv_delete).
func (kv KV) Delete(key string) error {
	h, err := kv.handle()
	if err != nil {
		return err
	}
	return done("kv_delete", key, hostKVDelete(h, key))
}

// List returns the keys that start with prefix (ABI: kv_list), in the
// order the host gives them; "" lists every key.
func (kv KV) List(prefix string) ([]string, error) {
	h, err := kv.handle()
	if err != nil {
		return nil, err
	}
	b, err := result("kv_list", prefix, hostKVList(h, prefix))
	if err != nil {
		return nil, err
	}
	keys := []string{}
	if err := json.Unmarshal(b, &keys); err != nil {
		return nil, &opError{op: "kv_list", name: prefix, err: ErrInvalid}
	}
	if keys == nil { // the host said null
		keys = []string{}
	}
	return keys, nil
}
