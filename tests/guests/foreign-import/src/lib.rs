//! A qhost task that also imports an interface qhost does not provide: qhost must refuse it
//! when it is added, naming the import.

wit_bindgen::generate!({
    inline: "
        package test:foreign;
        interface vault {
            secret: func() -> string;
        }
        world task {
            import vault;
            export run: func(input: list<u8>, info: u64) -> result<list<u8>, string>;
        }
    ",
});

struct Foreign;

impl Guest for Foreign {
    fn run(_input: Vec<u8>, _info: u64) -> Result<Vec<u8>, String> {
        Ok(test::foreign::vault::secret().into_bytes())
    }
}

export!(Foreign);
