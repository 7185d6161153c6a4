//! `lease-git-shim`: lease's git PATH shim, compiled (shim/README.md "`git`:
//! the PATH shim"). Install it as `git` in a directory put first on the
//! leased command's `PATH`; it decides and joins as shim/git does, without
//! a shell and without starting `lease` (`lease::cli::shim`).
//!
//! Its start is what every git call of an agent pays, so it skips std's
//! runtime set-up (`no_main`: no SIGPIPE change, so git inherits the
//! caller's disposition as from the script; no stack-guard probe, which
//! reads `/proc/self/maps`, a quarter of its instructions). std's
//! arguments and environment still work: glibc hands them to std before
//! `main` (std's `args` on Linux).
#![no_main]
#![allow(unsafe_code)]

/// The shim marker lease looks for in the first 4 KiB of a git candidate
/// (`lease::git::SHIM_MARKER`, shim/README.md): lease never takes a file
/// carrying it for git, so this binary is never lease's own git. An ELF
/// note (`SHT_NOTE`, from the `.note` prefix; name `lease-shim`, no
/// descriptor, the layout of elf(5)'s `Elf64_Nhdr`), which linkers place
/// right after the program headers, in the file's first page; the test
/// `shim::compiled_shim_carries_the_marker_in_its_first_4_kib` checks it.
#[repr(C, align(4))]
struct Note {
    namesz: u32,
    descsz: u32,
    kind: u32,
    name: [u8; 12],
}

#[used]
#[unsafe(link_section = ".note.lease-shim")]
static MARKER: Note = Note {
    namesz: 11,
    descsz: 0,
    kind: 1,
    name: *b"lease-shim\0\0",
};

/// The C entry point (`no_main`): the shim's exit status when it cannot
/// exec git.
#[unsafe(no_mangle)]
extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    std::ffi::c_int::from(lease::cli::shim::main(|k, v| {
        // SAFETY: this program never starts a thread (lease::cli::shim
        // runs on the main thread and then execs), so nothing reads or
        // writes the environment concurrently (std::env::set_var's
        // safety condition).
        unsafe { std::env::set_var(k, v) }
    }))
}
