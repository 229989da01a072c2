use super::*;

const NS: &str = "http://www.ibm.com/xmlns/prod/streams/application/v4200";

fn adl(body: &str) -> String {
    format!(
        "<applicationSet xmlns='{NS}'><splApplication name='x'><composites><compositeOperInstances>\
         <compositeOperInstance index='9' definitionIndex='0' name='M'>{body}</compositeOperInstance>\
         </compositeOperInstances></composites></splApplication></applicationSet>"
    )
}

fn refused(text: &str) -> AdlError {
    match document(text.as_bytes(), 1 << 20).and_then(|doc| read(&doc).map(|_| ())) {
        Ok(()) => panic!("accepted: {text}"),
        Err(err) => err,
    }
}
