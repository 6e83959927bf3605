package config

import (
	"fmt"
	"net/http"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/version"
)

// How an http_sd source authenticates: the HTTP client fields of
// Prometheus's own http_sd_configs (authorization, basic_auth, tls_config,
// proxy_url, http_headers, follow_redirects, enable_http2), inline in the
// source, decoded and served by prometheus/common's HTTPClientConfig.
// Secrets come only from files (credentials_file, password_file, key_file,
// header files), which the client reads again on every request, so a
// rotated token applies at the next fetch. No proxy is used unless
// proxy_url or proxy_from_environment says so.

// UnmarshalYAML fills in Prometheus's client defaults (follow_redirects
// and enable_http2 on) before the fields of the file.
func (s *HTTPSD) UnmarshalYAML(unmarshal func(any) error) error {
	type httpSD HTTPSD // the fields, without this method
	*s = HTTPSD{HTTPClientConfig: promconfig.DefaultHTTPClientConfig}
	return unmarshal((*httpSD)(s))
}

// Client is the HTTP client that fetches s.URL: its authentication, TLS
// and proxy, no keep-alive between fetches (one request a refresh).
func (s HTTPSD) Client() (*http.Client, error) {
	return promconfig.NewClientFromConfig(s.HTTPClientConfig, "http_sd",
		promconfig.WithKeepAlivesDisabled(),
		promconfig.WithUserAgent(version.ComponentUserAgent("redis-prober")))
}

// refusal is a field of an http_sd client the prober refuses, when bad.
type refusal struct {
	bad  bool
	msg  string
	path []any
}

// clientFile is a file the http_sd client reads.
type clientFile struct {
	name string
	path []any
}

// validateHTTPClient refuses secrets written in the file and what the
// prober cannot serve, runs the library's own checks, and reads every file
// the client will read (so --config.check finds a missing one).
func (s *HTTPSD) validateHTTPClient(fail func(msg string, path ...any) error) error {
	c := &s.HTTPClientConfig
	inline := func(file string) string {
		return "secrets are read from files, not written in the config: give " + file
	}
	const noRef = "needs a secret manager, which redis-prober has not: give the _file field"
	refused := []refusal{
		{c.BearerToken != "", inline("authorization: {credentials_file: ...}"), []any{"bearer_token"}},
		{c.Authorization != nil && c.Authorization.Credentials != "", inline("credentials_file"), []any{"authorization", "credentials"}},
		{c.Authorization != nil && c.Authorization.CredentialsRef != "", noRef, []any{"authorization", "credentials_ref"}},
		{c.BasicAuth != nil && c.BasicAuth.Password != "", inline("password_file"), []any{"basic_auth", "password"}},
		{c.BasicAuth != nil && c.BasicAuth.PasswordRef != "", noRef, []any{"basic_auth", "password_ref"}},
		{c.BasicAuth != nil && c.BasicAuth.UsernameRef != "", noRef, []any{"basic_auth", "username_ref"}},
		{c.TLSConfig.Key != "", inline("key_file"), []any{"tls_config", "key"}},
		{c.TLSConfig.CARef != "" || c.TLSConfig.CertRef != "" || c.TLSConfig.KeyRef != "", noRef, []any{"tls_config"}},
		{c.OAuth2 != nil, "is not supported by redis-prober: use authorization or basic_auth", []any{"oauth2"}},
		{len(c.ProxyConnectHeader) > 0, "is not supported: its values are secrets written in the config", []any{"proxy_connect_header"}},
		{c.ProxyURL.URL != nil && c.ProxyURL.User != nil, "must not hold credentials", []any{"proxy_url"}},
	}
	var files []clientFile
	if c.HTTPHeaders != nil {
		for name, h := range c.HTTPHeaders.Headers {
			refused = append(refused, refusal{len(h.Secrets) > 0, inline("files"), []any{"http_headers", name, "secrets"}})
			for _, f := range h.Files {
				files = append(files, clientFile{f, []any{"http_headers", name, "files"}})
			}
		}
	}
	for _, r := range refused {
		if r.bad {
			return fail(r.msg, r.path...)
		}
	}
	credentials := []any{"authorization", "credentials_file"}
	if c.BearerTokenFile != "" {
		credentials = []any{"bearer_token_file"}
	}
	if err := c.Validate(); err != nil { // also turns bearer_token_file into authorization
		return fail(err.Error())
	}
	if a := c.Authorization; a != nil {
		files = append(files, clientFile{a.CredentialsFile, credentials})
	}
	if b := c.BasicAuth; b != nil {
		files = append(files, clientFile{b.UsernameFile, []any{"basic_auth", "username_file"}},
			clientFile{b.PasswordFile, []any{"basic_auth", "password_file"}})
	}
	for _, f := range files {
		if f.name == "" {
			continue
		}
		if _, err := ReadSecret(f.name); err != nil {
			return fail(fmt.Sprintf("cannot read: %v", err), f.path...)
		}
	}
	if _, err := promconfig.NewTLSConfig(&c.TLSConfig); err != nil {
		return fail(err.Error(), "tls_config")
	}
	return nil
}
