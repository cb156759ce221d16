//! `#[qhost_guest::task]`: exports a plain function as the `run` of the `qhost:task`
//! world. Written on `proc_macro` alone (no syn): it needs only the function's name,
//! and the compiler checks the signature where the expansion calls the function.

use proc_macro::{Delimiter, TokenStream, TokenTree};

/// Makes the function the task's `run`. The function takes `(&[u8], &TaskInfo)` and
/// returns `Result<O, E>`, where `O` is a `qhost_guest::Output` (`Vec<u8>`, `String`,
/// `&str`, `()`, `Json<T>`) and `E` shows itself (`Display`: `String`, `anyhow::Error`,
/// ...). One per crate.
///
/// ```ignore
/// #[qhost_guest::task]
/// fn run(input: &[u8], info: &qhost_guest::TaskInfo) -> Result<String, String> {
///     Ok(format!("task {} got {} bytes", info.id, input.len()))
/// }
/// ```
#[proc_macro_attribute]
pub fn task(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        return error("#[qhost_guest::task] takes no arguments");
    }
    let Some(name) = function_name(item.clone()) else {
        return error(
            "#[qhost_guest::task] goes on a function: \
             fn run(input: &[u8], info: &TaskInfo) -> Result<Vec<u8>, String>",
        );
    };
    let export: TokenStream = format!(
        "const _: () = {{
            struct __QhostTask;
            impl ::qhost_guest::__private::Guest for __QhostTask {{
                fn run(
                    input: ::std::vec::Vec<u8>,
                    info: ::qhost_guest::TaskInfo,
                ) -> ::std::result::Result<::std::vec::Vec<u8>, ::std::string::String> {{
                    ::qhost_guest::__private::finish({name}(&input, &info))
                }}
            }}
            ::qhost_guest::__private::bindings::__export!(
                __QhostTask with_types_in ::qhost_guest::__private::bindings
            );
        }};"
    )
    .parse()
    .expect("the expansion is valid Rust");
    let mut out = item;
    out.extend(export);
    out
}

/// The name after the item's `fn` keyword, skipping attributes, visibility and
/// qualifiers before it; `None` when the item is not a function.
fn function_name(item: TokenStream) -> Option<String> {
    let mut tokens = item.into_iter();
    while let Some(token) = tokens.next() {
        match token {
            TokenTree::Ident(ident) if ident.to_string() == "fn" => {
                return match tokens.next() {
                    Some(TokenTree::Ident(name)) => Some(name.to_string()),
                    _ => None,
                };
            }
            // A function's body is the first brace group at the top level: no `fn` past it.
            TokenTree::Group(group) if group.delimiter() == Delimiter::Brace => return None,
            _ => {}
        }
    }
    None
}

fn error(message: &str) -> TokenStream {
    format!("::std::compile_error!({message:?});")
        .parse()
        .expect("compile_error! is valid Rust")
}
