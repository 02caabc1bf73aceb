"""How the SDK reaches spaced: HTTP/1.1 over its Unix socket or over TCP.

A Transport holds the address, the token and the default request timeout. It
opens one connection per request (cheap on a Unix socket, and it keeps every
call independent and thread-safe), turns error answers into typed exceptions
(errors.from_response) and socket failures into TimeoutError or
ConnectionError.

Configuration, like the CLI:
  SPACE_HOST   unix:///run/space/space.sock (default), unix:///other.sock,
               http://HOST:PORT or https://HOST:PORT
  SPACE_TOKEN  bearer token, needed over TCP
  SPACE_CA     for https, the CA bundle (PEM) that signed spaced's certificate;
               default: the system's. The certificate and its name are always
               verified; a CA with an http:// host is refused, not ignored.

Timeouts are per socket operation: a request fails with TimeoutError when the
daemon sends nothing for `timeout` seconds (None: wait for ever). Streams are
read with the timeout their caller chooses.
"""

import base64
import http.client
import json
import os
import socket
import ssl
import urllib.parse

from . import errors

DEFAULT_HOST = "unix:///run/space/space.sock"
DEFAULT_REQUEST_TIMEOUT = 60.0
BLOCK = 1 << 20           # upload block and download chunk size
MAX_EVENT_LINE = 64 << 20  # an NDJSON line longer than this is a protocol error

_UNSET = object()


class _UnixConnection(http.client.HTTPConnection):
    """HTTP/1.1 over a Unix stream socket."""

    def __init__(self, path, timeout):
        super().__init__("space", timeout=timeout, blocksize=BLOCK)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(self.timeout)
            s.connect(self.unix_path)
        except BaseException:
            s.close()
            raise
        self.sock = s


def parse_host(host):
    """("unix", path) or ("http"|"https", hostname, port) for a SPACE_HOST value."""
    if host.startswith("/"):
        return ("unix", host)
    u = urllib.parse.urlsplit(host)
    if u.scheme == "unix":
        path = (u.netloc + u.path) if u.netloc else u.path
        if not path:
            raise errors.InvalidArgumentError("SPACE_HOST %r names no socket path" % host)
        return ("unix", path)
    if u.scheme in ("http", "https"):
        if not u.hostname:
            raise errors.InvalidArgumentError("SPACE_HOST %r names no host" % host)
        return (u.scheme, u.hostname, u.port or (443 if u.scheme == "https" else 80))
    raise errors.InvalidArgumentError(
        "SPACE_HOST must be unix:///path/to/socket or http://HOST:PORT, not %r" % host)


class Response:
    """A finished response: status, lower-cased headers and the body bytes."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        """The body decoded as JSON (None for an empty body)."""
        if not self.body:
            return None
        try:
            return json.loads(self.body.decode("utf-8"))
        except ValueError:
            raise errors.SpaceError("the daemon answered something that is not JSON: %r" % self.body[:200],
                                    self.status)

    @property
    def resumed(self):
        """Whether the daemon resumed a paused or suspended sandbox to serve this request."""
        return self.headers.get("space-resumed") == "true"


class OpenResponse:
    """A response whose body is still being read (a file or an NDJSON stream).

    close() may be called from another thread to end a blocked read.
    """

    def __init__(self, conn, resp, sock, timeout):
        self._conn = conn
        self._resp = resp
        self._sock = sock
        self._buf = b""
        self._eof = False
        self._closed = False
        self.timeout = timeout
        self.status = resp.status
        self.headers = {k.lower(): v for k, v in resp.getheaders()}

    def set_timeout(self, timeout):
        """Changes how long a read may wait for the daemon (None: for ever)."""
        self.timeout = timeout
        if self._sock is not None:
            try:
                self._sock.settimeout(timeout)
            except OSError:
                pass

    def read_chunk(self, size=BLOCK):
        """Up to `size` bytes of the body as they come; b"" at its end."""
        if self._buf:
            out, self._buf = self._buf[:size], self._buf[size:]
            return out
        if self._eof:
            return b""
        try:
            data = self._resp.read1(size)
        except socket.timeout:
            self.close()
            raise errors.TimeoutError("the daemon sent nothing for %s s" % self.timeout)
        except (OSError, http.client.HTTPException, ValueError, AttributeError) as e:
            if self._closed:
                return b""
            raise errors.ConnectionError("the connection to the daemon broke: %s" % (e,))
        if not data:
            self._eof = True
        return data

    def read_line(self):
        """The next line of the body without its newline, or None at the end."""
        while b"\n" not in self._buf:
            if self._eof:
                if self._buf.strip():
                    raise errors.ConnectionError("the stream ended inside a line")
                return None
            try:
                data = self._resp.read1(BLOCK)
            except socket.timeout:
                self.close()
                raise errors.TimeoutError("the daemon sent nothing for %s s" % self.timeout)
            except (OSError, http.client.HTTPException, ValueError, AttributeError) as e:
                if self._closed:
                    return None
                raise errors.ConnectionError("the connection to the daemon broke: %s" % (e,))
            if not data:
                self._eof = True
            self._buf += data
            if len(self._buf) > MAX_EVENT_LINE:
                raise errors.SpaceError("an event line is over %d bytes" % MAX_EVENT_LINE)
        line, self._buf = self._buf.split(b"\n", 1)
        return line

    def events(self):
        """Yields the decoded JSON objects of an NDJSON body, one a line, as they arrive."""
        while True:
            line = self.read_line()
            if line is None:
                return
            if not line.strip():
                continue
            try:
                yield json.loads(line.decode("utf-8"))
            except ValueError:
                raise errors.SpaceError("the daemon sent a line that is not JSON: %r" % line[:200])

    def close(self):
        """Ends the response; safe to call twice and from another thread."""
        self._closed = True
        sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for c in (self._resp, self._conn):
            try:
                c.close()
            except Exception:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Transport:
    """The address, credentials and default timeout of one spaced.

    Args:
        host: a SPACE_HOST value; default: $SPACE_HOST, then the system socket.
        token: the bearer token; default: $SPACE_TOKEN (only sent when set).
        request_timeout: seconds a request may wait for the daemon; default 60.
        ca: for an https host, the CA bundle (a PEM file) that signed the daemon's
            certificate; default: $SPACE_CA, then the system's.
    """

    def __init__(self, host=None, token=None, request_timeout=None, ca=None):
        self.host = host or os.environ.get("SPACE_HOST") or DEFAULT_HOST
        self.token = token if token is not None else (os.environ.get("SPACE_TOKEN") or None)
        self.request_timeout = DEFAULT_REQUEST_TIMEOUT if request_timeout is None else request_timeout
        self.ca = ca or os.environ.get("SPACE_CA") or None
        self._addr = parse_host(self.host)
        self._tls = None
        if self._addr[0] == "http" and self.ca:
            raise errors.InvalidArgumentError(
                "a CA (%s) is given but %s is not https://: refusing to talk plain HTTP" % (self.ca, self.host))
        if self._addr[0] == "https":
            try:
                self._tls = ssl.create_default_context(cafile=self.ca)
            except (OSError, ssl.SSLError) as e:
                raise errors.InvalidArgumentError("cannot load the CA bundle %s: %s" % (self.ca, e))

    def __repr__(self):
        return "Transport(%r)" % self.host

    def _timeout(self, timeout):
        return self.request_timeout if timeout is _UNSET else timeout

    def _connection(self, timeout):
        a = self._addr
        if a[0] == "unix":
            return _UnixConnection(a[1], timeout)
        if a[0] == "https":
            return http.client.HTTPSConnection(a[1], a[2], timeout=timeout, blocksize=BLOCK, context=self._tls)
        return http.client.HTTPConnection(a[1], a[2], timeout=timeout, blocksize=BLOCK)

    def _send(self, method, path, query, body, data, headers, timeout):
        """Sends a request; the connection and its response (headers read)."""
        if query:
            path += "?" + urllib.parse.urlencode(query, doseq=True, quote_via=urllib.parse.quote)
        hdrs = {"Accept": "application/json, application/x-ndjson"}
        if self.token:
            hdrs["Authorization"] = "Bearer " + self.token
        payload = None
        if body is not None:
            payload = json.dumps(body).encode("utf-8")
            hdrs["Content-Type"] = "application/json"
        elif data is not None:
            payload = data
            hdrs["Content-Type"] = "application/octet-stream"
            if isinstance(data, (bytes, bytearray, memoryview)):
                hdrs["Content-Length"] = str(len(data))
            else:
                hdrs["Content-Length"] = str(os.fstat(data.fileno()).st_size - data.tell())
        if payload is None and method in ("POST", "PUT"):
            hdrs["Content-Length"] = "0"
        hdrs.update(headers or {})
        conn = self._connection(timeout)
        try:
            conn.request(method, path, body=payload, headers=hdrs)
            sock = conn.sock  # getresponse() may drop conn.sock; the response keeps using it
            resp = conn.getresponse()
        except socket.timeout:
            conn.close()
            raise errors.TimeoutError("%s %s: no answer from %s within %s s" % (method, path, self.host, timeout))
        except ssl.SSLCertVerificationError as e:
            conn.close()
            raise errors.ConnectionError("%s %s: cannot verify the certificate of spaced at %s: %s (%s)" % (
                method, path, self.host, e.verify_message or e,
                "is %s the CA that signed it?" % self.ca if self.ca else "set SPACE_CA or ca= to the CA that signed it"))
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise errors.ConnectionError("%s %s: cannot talk to spaced at %s: %s" % (method, path, self.host, e))
        return conn, resp, sock

    def request(self, method, path, query=None, body=None, data=None, headers=None, timeout=_UNSET,
                not_found=None):
        """Sends a request and reads the whole answer; a Response, or raises for 4xx/5xx.

        body is a JSON-able object; data raw bytes or a binary file (sent in blocks).
        not_found is the NotFoundError subclass a 404 means for this route.
        """
        timeout = self._timeout(timeout)
        conn, resp, _ = self._send(method, path, query, body, data, headers, timeout)
        try:
            payload = resp.read()
            hdrs = {k.lower(): v for k, v in resp.getheaders()}
        except socket.timeout:
            raise errors.TimeoutError("%s %s: the answer stalled for %s s" % (method, path, timeout))
        except (OSError, http.client.HTTPException) as e:
            raise errors.ConnectionError("%s %s: the connection broke: %s" % (method, path, e))
        finally:
            conn.close()
        if resp.status >= 400:
            raise errors.from_response(resp.status, payload, not_found)
        return Response(resp.status, hdrs, payload)

    def json(self, method, path, **kw):
        """request() and the decoded JSON body."""
        return self.request(method, path, **kw).json()

    def open(self, method, path, query=None, body=None, data=None, headers=None, timeout=_UNSET,
             not_found=None):
        """Sends a request and returns an OpenResponse to read the body as it comes.

        An error answer is read whole and raised, as in request().
        """
        timeout = self._timeout(timeout)
        conn, resp, sock = self._send(method, path, query, body, data, headers, timeout)
        if resp.status >= 400:
            try:
                payload = resp.read()
            except (OSError, http.client.HTTPException):
                payload = b""
            finally:
                conn.close()
            raise errors.from_response(resp.status, payload, not_found)
        return OpenResponse(conn, resp, sock, timeout)


def event_bytes(ev, name="data"):
    """The bytes of an output field (`data`, `stdout`, `stderr`), whichever encoding the daemon chose."""
    if name in ev and ev[name] is not None:
        return ev[name].encode("utf-8")
    b64 = ev.get(name + "_b64")
    return base64.b64decode(b64) if b64 else b""
