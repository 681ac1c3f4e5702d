<?php
// lockcheck's external-client protocol (locks/README-external.md, protocol 2) for the PHP adapters: one JSON
// request per line on stdin, one JSON answer per line on stdout, flushed after each; event lines (hello, lost)
// only after a protocol-2 request. The PHP counterpart of clients/internal/proto (Go).

const LC_HELD = 'held';               // another holder has the lock
const LC_NOT_HELD = 'not_held';       // release/extend: this client no longer holds it (expired or taken)
const LC_TIMEOUT = 'timeout';         // no answer in time: the op may have happened
const LC_UNREACHABLE = 'unreachable'; // the node (or a quorum) could not be reached
const LC_ERROR = 'error';             // anything else

final class LcProto
{
    public static bool $v2 = false;      // a protocol-2 request was seen: event lines may be written
    public static bool $helloSent = false;

    public static function write(array $v): void
    {
        fwrite(STDOUT, json_encode($v, JSON_UNESCAPED_SLASHES) . "\n");
        fflush(STDOUT);
    }
}

function lc_ok(array $extra = []): array
{
    return ['ok' => true] + $extra;
}

// A definite failure: it certainly did not happen.
function lc_fail(string $reason, string $why): array
{
    return ['ok' => false, 'reason' => $reason, 'error' => $why];
}

// It may or may not have happened (a request sent without an answer).
function lc_indeterminate(string $reason, string $why): array
{
    return ['ok' => false, 'indeterminate' => true, 'reason' => $reason, 'error' => $why];
}

// The library told its caller that the lock on $key is gone; written only to a protocol-2 harness.
function lc_lost(string $key, string $detail): void
{
    if (LcProto::$v2) {
        LcProto::write(['event' => 'lost', 'key' => $key, 'detail' => $detail]);
    }
}

// The longest one call may block (protocol 2's hello), once.
function lc_hello(int $maxCallMs): void
{
    if (LcProto::$v2 && !LcProto::$helloSent && $maxCallMs > 0) {
        LcProto::write(['event' => 'hello', 'max_call_ms' => $maxCallMs]);
        LcProto::$helloSent = true;
    }
}

// The exception chain of $e, outermost first, as "Class: message; Class: message".
function lc_describe(\Throwable $e): string
{
    $parts = [];
    for ($x = $e; $x !== null; $x = $x->getPrevious()) {
        $parts[] = (new \ReflectionClass($x))->getShortName() . ': ' . $x->getMessage();
    }
    return implode('; ', $parts);
}

// The innermost exception of $e's chain.
function lc_root(\Throwable $e): \Throwable
{
    while ($e->getPrevious() !== null) {
        $e = $e->getPrevious();
    }
    return $e;
}

// Whether a phpredis exception certainly means nothing was sent: the connect itself failed (refused, no route,
// connect timeout) or the object was never connected ("went away" before any write on it).
function lc_not_sent(\Throwable $e): bool
{
    $m = $e->getMessage();
    return str_contains($m, 'Connection refused') || str_contains($m, 'Connection timed out')
        || str_contains($m, 'No route to host') || str_contains($m, 'php_network_getaddresses');
}

// Answers requests until stdin ends. $handle(array $req): array. $idle(): ?float is called before each wait
// and whenever stdin stays silent until the time it returned (seconds from now; null: wait for input only),
// for notices a library gives between requests (a lock whose lifetime ran out).
function lc_serve(callable $handle, ?callable $idle = null): void
{
    $in = STDIN;
    while (true) {
        $wait = $idle ? $idle() : null;
        if ($wait !== null) {
            $r = [$in];
            $w = $x = null;
            $sec = (int) max(0, floor($wait));
            $usec = (int) max(0, ($wait - $sec) * 1e6);
            $n = @stream_select($r, $w, $x, $sec, $usec);
            if ($n === 0) {
                continue; // timed out: $idle runs again
            }
        }
        $line = fgets($in);
        if ($line === false) {
            return; // stdin ended
        }
        if (trim($line) === '') {
            continue;
        }
        $req = json_decode($line, true);
        if (!is_array($req)) {
            LcProto::write(lc_fail(LC_ERROR, 'bad request: ' . json_last_error_msg()));
            continue;
        }
        if (($req['protocol'] ?? 0) >= 2) {
            LcProto::$v2 = true;
        }
        if (empty($req['nodes']) || !is_array($req['nodes'])) {
            LcProto::write(lc_fail(LC_ERROR, 'no nodes in the request'));
            continue;
        }
        try {
            $ans = $handle($req);
        } catch (\Throwable $e) { // a bug or an unexpected library error: say so, never die silently
            $ans = lc_indeterminate(LC_ERROR, 'unexpected ' . lc_describe($e));
        }
        LcProto::write($ans);
    }
}

// "host:port" -> [host, port].
function lc_host_port(string $node): array
{
    $i = strrpos($node, ':');
    return [substr($node, 0, $i), (int) substr($node, $i + 1)];
}

// --flag value / --flag=value / --switch from $argv against $spec (name => default; bool defaults are switches).
// Exits 2 naming the flag on anything unknown or malformed.
function lc_flags(array $argv, array $spec, string $who): array
{
    $out = $spec;
    for ($i = 1; $i < count($argv); ++$i) {
        $a = $argv[$i];
        if (!str_starts_with($a, '--')) {
            fwrite(STDERR, "$who: unexpected argument '$a'\n");
            exit(2);
        }
        $name = substr($a, 2);
        $val = null;
        if (str_contains($name, '=')) {
            [$name, $val] = explode('=', $name, 2);
        }
        if (!array_key_exists($name, $spec)) {
            fwrite(STDERR, "$who: unknown flag --$name (known: --" . implode(', --', array_keys($spec)) . ")\n");
            exit(2);
        }
        if (is_bool($spec[$name])) {
            $out[$name] = true;
            continue;
        }
        if ($val === null) {
            if (++$i >= count($argv)) {
                fwrite(STDERR, "$who: --$name needs a value\n");
                exit(2);
            }
            $val = $argv[$i];
        }
        if (!is_numeric($val) || (float) $val < 0) {
            fwrite(STDERR, "$who: --$name: '$val' is not a non-negative number\n");
            exit(2);
        }
        $out[$name] = is_int($spec[$name]) && ctype_digit($val) ? (int) $val : (float) $val;
    }
    return $out;
}
