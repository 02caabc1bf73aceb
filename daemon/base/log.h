/*
 * daemon/base/log.h - spaced's log: one line per event on stderr, with the time and
 * a level. Only main-level code and the threads' top loops log; library-like
 * modules return errors instead.
 *
 * When stderr is the journal's stream (systemd's JOURNAL_STREAM names its device and inode),
 * a line is "<N>LEVEL TEXT" instead, N its sd-daemon(3) priority (3 error, 4 warn, 6 info), and
 * the journal stamps the time.
 */
#ifndef SPACE_DAEMON_LOG_H
#define SPACE_DAEMON_LOG_H

void log_msg(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_info(...) log_msg("info", __VA_ARGS__)
#define log_warn(...) log_msg("warn", __VA_ARGS__)
#define log_error(...) log_msg("error", __VA_ARGS__)

#endif
