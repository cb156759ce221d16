//! A component whose `run` has the wrong signature: qhost must refuse it when it is added.

wit_bindgen::generate!({
    inline: "
        package test:wrong;
        world task {
            export run: func(input: string) -> string;
        }
    ",
});

struct Wrong;

impl Guest for Wrong {
    fn run(input: String) -> String {
        input
    }
}

export!(Wrong);
